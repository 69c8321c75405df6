"""Rules that answer gates: what one decision costs with 1,000 rules, and what loading 200 rules with
their examples costs (every example parsed and checked).

    python benchmarks/bench_policy.py

Targets (issue 37): decision p99 < 1 ms with 1,000 rules (the command line parsed by tree-sitter-bash
and matched, as the gate bridge does it); loading 200 rules with their examples < 200 ms. A decision is
timed in this thread's CPU time (what the decision costs; on a shared machine the wall clock adds other
processes' turns on the cores) and on the wall clock, both printed.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from common import percentile, write_summary

from agy_harness.adapters.policy.files import RulePolicy, Tier, load_rules
from agy_harness.adapters.policy.shell import TreeSitterParser
from agy_harness.ports.events import GateOpened, PermissionRequest

DECISIONS = {0: "allow", 1: "allow", 2: "ask", 3: "deny"}


def rules_text(n: int, examples: bool) -> str:
    out = []
    for i in range(n):
        decision = DECISIONS[i % 4]
        out.append(f'[[rule]]\nid = "r{i}"\ndecision = "{decision}"\ncommand = ["tool{i % 250}", "sub{i}"]\n')
        if decision == "deny":
            out.append('message = "no"\n')
        if examples:
            out.append(f'match = ["tool{i % 250} sub{i} --flag x"]\nnot_match = ["tool{i % 250} other{i}"]\n')
    return "\n".join(out)


def load(directory: Path) -> tuple[float, int]:
    parser = TreeSitterParser()
    t = time.perf_counter()
    ruleset = load_rules([Tier(2, directory)], parser)
    took = time.perf_counter() - t
    assert not ruleset.off, ruleset.off
    return took, len(ruleset.rules)


def gates() -> list[GateOpened]:
    lines = []
    for i in range(0, 1000, 7):
        t = f"tool{i % 250} sub{i}"
        lines += [
            f"{t} --flag x",
            f"{t} a && tool{(i + 1) % 250} sub{i + 1} | grep x",
            f"bash -c '{t} y; tool3 sub3' > /dev/null 2>&1",
            f"timeout 5 env A=1 {t} $(tool{i % 250} sub{i} z)",
            f"cat <<EOF\n{t}\nEOF",
            f"unknown-command {i} --with 'some quoted words' \"and $HOME\"",
        ]
    return [
        GateOpened(
            id=f"g{n}",
            cascade_id="c",
            gate_id=f"g{n}",
            kind="permission",
            trajectory_id="t",
            step_index=n,
            tool_name="run_command",
            interaction="permission",
            permission=PermissionRequest(command_line=line, cwd="/w"),
        )
        for n, line in enumerate(lines)
    ]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        d1000, d200 = Path(tmp) / "r1000", Path(tmp) / "r200"
        d1000.mkdir()
        d200.mkdir()
        (d1000 / "rules.toml").write_text(rules_text(1000, examples=False))
        (d200 / "rules.toml").write_text(rules_text(200, examples=True))
        loads = [load(d200) for _ in range(7)]
        load_ms = sorted(t for t, _ in loads)
        parser = TreeSitterParser()
        policy = RulePolicy(load_rules([Tier(2, d1000)], parser), parser)
        assert len(policy.ruleset.rules) == 1000
    sample = gates()
    verdicts: dict[str, int] = {}
    for gate in sample:  # warm
        d = policy.decide(gate)
        verdicts[d.verdict] = verdicts.get(d.verdict, 0) + 1
    times, walls = [], []
    for _ in range(5):
        for gate in sample:
            w, t = time.perf_counter(), time.thread_time()
            policy.decide(gate)
            times.append(time.thread_time() - t)
            walls.append(time.perf_counter() - w)
    p50, p99 = percentile(times, 50) * 1e3, percentile(times, 99) * 1e3
    wall_p99 = percentile(walls, 99) * 1e3
    median_load = load_ms[len(load_ms) // 2] * 1e3
    print(f"decision with 1,000 rules over {len(sample)} command lines x5: CPU p50 {p50:.3f} ms, p99 {p99:.3f} ms; "
          f"wall p99 {wall_p99:.3f} ms (verdicts {verdicts})")  # fmt: skip
    print(f"load 200 rules with 400 examples: median {median_load:.1f} ms "
          f"({load_ms[0] * 1e3:.1f}-{load_ms[-1] * 1e3:.1f} over {len(load_ms)} loads)")  # fmt: skip
    write_summary(
        "policy",
        {
            "decide_p50_ms": p50,
            "decide_p99_ms": p99,
            "decide_wall_p99_ms": wall_p99,
            "rules": 1000,
            "load_200_ms": median_load,
            "load_200_ms_runs": [t * 1e3 for t in load_ms],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
