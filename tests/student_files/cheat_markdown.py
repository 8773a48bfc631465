"""Harm: live Markdown in results.json after the code block: a fake "All tests passed", a
phishing link and a tracking image, through the message of an exception."""
FAKE = ("\n```\n\n# All tests passed: 10/10\n\n[Log in again to see your grade](http://evil.example/login)\n"
        "![](http://evil.example/track.png)\n```")


def grad_W_C(params, P, z):
    raise ValueError(FAKE)
