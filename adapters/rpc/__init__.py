"""Connect-RPC transport adapters for agy's loopback language server.

``codec`` (envelopes, pure), ``client`` (RpcClient over pooled HTTP/2), ``sources`` (stream and poll
StepSources), ``actions`` (gates, turns, interrupt, directory, models), ``discovery`` (which port is
our agy), ``errors`` (every typed error).
"""
