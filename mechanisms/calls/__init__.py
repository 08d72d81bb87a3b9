"""Calls: user code and external programs run with a bound — one-line errors naming the user
function, the watchdog that stops a call that hangs, and the subprocess protocol of an external program.
"""
