"""Seeded problems shared by the tests."""
import numpy as np

from numpy_mamba import Params, stack


def random_problem(seed, d=5, l=4, B=6, m=None, scale=0.5):
    """Random Params and prompts (labels +-1, query label 0) with a full W for the scan."""
    rng = np.random.default_rng(seed)
    m = d + 1 if m is None else m
    d0 = d + 1
    W = rng.normal(0, scale, (d0, d0))
    params = Params(rng.normal(0, scale, (m, d0)), rng.normal(0, scale, (m, d0)), W[:, -1].copy())
    P = rng.normal(0, 1, (B, d0, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    z = rng.choice([-1.0, 1.0], size=B)
    return params, W, P, z


def stack_problem(kind, model, n_layers, seed=0, d=3, B=6):
    """Seeded stack and prompts: "generic" (l = 4), "l1" (l = 1) or "saturated" (l = 4, layer-1 gate
    logits |w_j^T h_i| of 30-50 on every other token, moderate on the rest).  z puts the prompt
    with the largest |F| (> 2) on the flat side of the hinge and every other prompt on the active side."""
    rng = np.random.default_rng(seed)
    l, d0 = (1 if kind == "l1" else 4), d + 1
    P = rng.normal(0, 1, (B, d0, l + 1))
    P[:, -1, :l] = rng.choice([-1.0, 1.0], size=(B, l))
    P[:, -1, l] = 0.0
    scale = (0.5 if model == "mamba" else 0.3) / np.sqrt(n_layers)     # keep F of order 1
    layers = [stack.LayerParams(rng.normal(0, scale, (d0 + 1, d0)), rng.normal(0, scale, (d0 + 1, d0)),
                                rng.normal(0, 0.7, (d0, d0))) for _ in range(n_layers)]
    if kind == "saturated":
        u = np.zeros(d0)
        u[:d] = rng.normal(size=d)
        u /= np.linalg.norm(u)                                            # labels untouched
        P -= u[None, :, None] * np.einsum("d,bdi->bi", u, P)[:, None, :]  # u^T p_i = 0 ...
        P[:, :, ::2] += 1.5 * u[:, None] * rng.choice([-1.0, 1.0], size=(B, 1, 1))   # ... +-1.5 on even i
        layers = [layer._replace(W=layer.W + np.outer(u, rng.uniform(20, 30, d0))) for layer in layers]
    F = stack.forward(layers, P, model)
    for _ in range(20):                                  # the last layer's O is linear in its W_C
        if np.abs(F).max() > 2:
            break
        layers[-1] = layers[-1]._replace(W_C=2 * layers[-1].W_C)
        F = stack.forward(layers, P, model)
    sign = np.where(F >= 0, 1.0, -1.0)
    z = np.where(np.abs(F) == np.abs(F).max(), sign, -sign)
    return layers, P, z


def broken_links(report):
    """The links of a Markdown report that lead nowhere: '](#x)' with no heading whose anchor is #x
    (``runs.claims.anchor``) and no <a name="x">, '](file)' with no such file beside it, and
    '](file.md#x)' with no such file or no such anchor in it."""
    import re
    from pathlib import Path

    from numpy_mamba.runs.claims import anchor

    def targets(text):
        found = {anchor(line) for line in text.splitlines() if line.startswith("#")}
        return found | {"#" + name for name in re.findall(r'<a name="([^"]+)"></a>', text)}

    text = Path(report).read_text()
    broken = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in link:
            continue
        name, _, fragment = link.partition("#")
        other = Path(report).parent / name
        if name and not other.exists():
            broken.append(link)
        elif fragment and "#" + fragment not in targets(other.read_text() if name else text):
            broken.append(link)
    return broken


def saturated_long_prompt(d=2, l=1000):
    """(layer, P (1, d+1, l+1)): every gate logit a_{j,i} = 50 x_{i,1} = +-50 on every token of a long
    prompt, so that channel 0's gates decay by e^-50 a token, far past float64's range over l."""
    rng = np.random.default_rng(0)
    P = np.zeros((1, d + 1, l + 1))
    P[0, :d] = rng.choice([-1.0, 1.0], size=(d, l + 1))
    P[0, d, :l] = rng.choice([-1.0, 1.0], size=l)
    W = np.zeros((d + 1, d + 1))
    W[0, :] = 50.0
    return stack.LayerParams(0.1 * np.eye(d + 1), 0.1 * np.eye(d + 1), W), P
