"""Broken: ignores SIGALRM, SIGTERM and SIGINT, then loops forever in grad_w."""
import signal

for sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, signal.SIG_IGN)


def grad_w(params, P, z):
    while True:
        pass
