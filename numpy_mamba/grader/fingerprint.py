"""The similarity flag's reader: every file of a submission as one normalised token stream, winnowed
into fingerprints (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003).  Standard library only and linear in the files' size: the grader
runs it as a script in a child of its own with a CPU-time and memory limit (``main``;
``similarity.py`` is the grader's side), so a hostile file costs its own row and nothing else.

``normalised`` reads the files (the graded file or a notebook's code cells, and each helper staged
beside it) as Python decodes them, as one program, and keeps what computes an answer, in one form:

  * dropped: docstrings, comments and statements that are a bare value, code after a return,
    raise, break or continue, branches under a constant false test, imports, functions no entry
    point reaches (in any file: a name or an attribute reaches a function of that name), and
    assignments to names nothing reads;
  * one spelling: a module bound under another name (``import numpy as xp``, ``np = numpy``,
    ``from numpy import einsum as e``) is the module's own name; ``np.matmul(a, b)``,
    ``np.dot(a, b)`` and ``a.dot(b)`` are ``a @ b``; ``np.add``, ``np.subtract``,
    ``np.multiply``, ``np.divide`` and ``np.true_divide`` of two arguments their operators;
    ``a - b`` is ``a + -b``, ``x += y`` is ``x = x + y``, ``np.transpose(a)`` and
    ``a.transpose()`` are ``a.T``;
  * one order: the operands of a chain of ``+`` or of ``*`` sorted by their shape (names not
    counted), so that commuting them changes nothing.

In its tokens every name but a module's, a builtin's and an attribute's is one placeholder (so a
function of the package reads the same pasted or imported, renamed or not), numbers and strings
theirs.  Every run of K tokens is hashed, and of each WINDOW consecutive
hashes the smallest (the rightmost of equals) is kept: two files sharing a run of K + WINDOW - 1
tokens or more share a fingerprint.  The reader also names what of BUILDERS the files use to run
code it cannot see (``exec``, ``eval``, ``compile``, ``__import__``, importlib, marshal, pickle).
"""
from __future__ import annotations

import ast
import base64
import builtins
import copy
import hashlib
import importlib.util
import io
import json
import keyword
import sys
import tokenize

K = 12                          # tokens per hashed run (shorter common runs are noise)
WINDOW = 8                      # hashes per winnowing window
DEPTH = 10000                   # Python frames for the reader (the parser nests an expression ~3,000 deep)
SKIP = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
        tokenize.ENDMARKER)
ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
OWN = "numpy_mamba"             # its names are placeholders, as a pasted copy's are
BINARY = {"numpy.matmul": ast.MatMult, "numpy.dot": ast.MatMult, "numpy.add": ast.Add, "numpy.subtract": ast.Sub,
          "numpy.multiply": ast.Mult, "numpy.divide": ast.Div, "numpy.true_divide": ast.Div}
BUILDERS = {"exec", "eval", "compile", "__import__", "importlib", "marshal", "pickle"}


def _aliases(tree: ast.Module) -> dict:
    """{name: the module or module attribute it is bound to} for imports and ``x = module``, each
    chain of ``x = y`` followed once from the import it starts at (one pass over the file)."""
    found, links = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update({(a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0])
                          for a in node.names if a.name.split(".")[0] != OWN})
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.module.split(".")[0] != OWN:
            found.update({(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            links.setdefault(node.value.id, []).extend(t.id for t in node.targets if isinstance(t, ast.Name))
    todo = list(found)
    while todo:
        name = todo.pop()
        for target in links.pop(name, ()):
            if target not in found:
                found[target] = found[name]
                todo.append(target)
    return found


def _names_read(tree: ast.AST) -> set:
    """Names read, and attribute names (``helper.f`` reaches a function f of a helper)."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) or isinstance(n, ast.Attribute)}


class _Prune(ast.NodeTransformer):
    """Drops what cannot change a returned value (see the module docstring); ``dead`` are the
    names of the definitions no entry point reaches and of stores nothing reads."""

    def __init__(self, aliases: dict, dead: set):
        self.aliases, self.dead = aliases, dead

    def _body(self, body: list) -> list:
        out = []
        for statement in body:
            statement = self.visit(statement)
            for kept in statement if isinstance(statement, list) else [statement] if statement else []:
                out.append(kept)
                if isinstance(kept, ENDS):
                    return out
        return out or [ast.Pass()]

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list) and getattr(node, field):
                setattr(node, field, self._body(getattr(node, field)))
        for field, value in ast.iter_fields(node):
            if field not in ("body", "orelse", "finalbody"):
                if isinstance(value, list):
                    setattr(node, field, [self.visit(v) if isinstance(v, ast.AST) else v for v in value])
                elif isinstance(value, ast.AST):
                    setattr(node, field, self.visit(value))
        return node

    def visit_Expr(self, node):                             # a docstring, a bare value: kept if it calls
        return node if any(isinstance(n, ast.Call) for n in ast.walk(node)) else None

    def visit_Pass(self, node):
        return None

    def visit_If(self, node):
        if isinstance(node.test, ast.Constant):
            kept = node.body if node.test.value else node.orelse
            return self._body(kept) if kept else None
        return self.generic_visit(node)

    def visit_While(self, node):
        if isinstance(node.test, ast.Constant) and not node.test.value:
            return None
        return self.generic_visit(node)

    def _definition(self, node):
        return None if node.name in self.dead else self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition

    def visit_Import(self, node):
        return None

    visit_ImportFrom = visit_Import

    def visit_Assign(self, node):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if len(names) == len(node.targets) and (all(n in self.dead for n in names) or all(n in self.aliases
                                                                                         for n in names)):
            return None
        return self.generic_visit(node)

    def visit_AugAssign(self, node):
        return None if isinstance(node.target, ast.Name) and node.target.id in self.dead else self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.aliases and isinstance(node.ctx, ast.Load):
            head, *rest = self.aliases[node.id].split(".")
            named = ast.Name(head, ast.Load())
            for part in rest:                                # numpy.einsum as np.einsum reads: attributes
                named = ast.Attribute(named, part, ast.Load())
            return ast.copy_location(named, node)
        return node


def _dead(tree: ast.Module, entries) -> set:
    """Names of the top-level definitions no entry point (nor top-level code) reaches, and of the
    variables stored and never read."""
    defs = {}
    for n in tree.body:
        if isinstance(n, DEFS):
            defs.setdefault(n.name, []).append(n)
    reached, todo = set(), [n for n in entries if n in defs] if entries else list(defs)
    todo += [name for n in tree.body if not isinstance(n, DEFS) for name in _names_read(n) if name in defs]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [n for d in defs[name] for n in _names_read(d) if n in defs]
    kept = [d for n in reached for d in defs[n]] + [n for n in tree.body if not isinstance(n, DEFS)]
    read = _names_read(ast.Module(kept, []))
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return (set(defs) - reached) | (stored - read)


def _dotted(node) -> str:
    """"numpy.matmul" for the attribute ``numpy.matmul`` ("" when it is not names and attributes)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id] + parts[::-1]) if isinstance(node, ast.Name) else ""


class _Canonical(ast.NodeTransformer):
    """One spelling and one order (see the module docstring); ``keep``: the names that stay names
    (modules and builtins), every other one counting as one shape when operands are sorted."""

    def __init__(self, keep: set):
        self.keep = keep

    def visit(self, node):
        """Each node made canonical once (an operator's operands are, before it is)."""
        if getattr(node, "_canonical", False):
            return node
        node = super().visit(node)
        if isinstance(node, ast.AST):
            node._canonical = True
        return node

    def shape(self, node) -> bytes:
        """A digest of a canonical ``node``'s shape, names outside ``keep`` as one; kept on the node."""
        if not hasattr(node, "_shape"):
            if isinstance(node, ast.Name):
                words = [b"N", (node.id if node.id in self.keep else "V").encode()]
            else:
                words = [type(node).__name__.encode()]
                for _, value in ast.iter_fields(node):
                    for item in value if isinstance(value, list) else [value]:
                        words.append(self.shape(item) if isinstance(item, ast.AST) else repr(item).encode())
            node._shape = hashlib.blake2b(b"\0".join(words), digest_size=8).digest()
        return node._shape

    def visit_Call(self, node):
        self.generic_visit(node)
        name, args = _dotted(node.func), node.args
        plain = not node.keywords and not any(isinstance(a, ast.Starred) for a in args)
        if name in BINARY and len(args) == 2 and plain:
            return self.visit(ast.copy_location(ast.BinOp(args[0], BINARY[name](), args[1]), node))
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if method == "dot" and len(args) == 1 and plain and name not in BINARY:
            return self.visit(ast.copy_location(ast.BinOp(node.func.value, ast.MatMult(), args[0]), node))
        if plain and (name == "numpy.transpose" and len(args) == 1 or method == "transpose" and not args
                      and name != "numpy.transpose"):
            return ast.copy_location(ast.Attribute(args[0] if args else node.func.value, "T", ast.Load()), node)
        return node

    def visit_AugAssign(self, node):
        load = copy.deepcopy(node.target)
        load.ctx = ast.Load()
        return self.visit(ast.copy_location(ast.Assign([node.target], ast.BinOp(load, node.op, node.value)), node))

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Sub):
            node = ast.copy_location(ast.BinOp(node.left, ast.Add(), ast.UnaryOp(ast.USub(), node.right)), node)
        if not isinstance(node.op, (ast.Add, ast.Mult)):
            return self.generic_visit(node)
        operands, todo, kind = [], [node], type(node.op)
        while todo:                                         # the chain's operands, left to right; a chain
            item = todo.pop()                               # made canonical already stays whole (linear)
            if isinstance(item, ast.BinOp) and not getattr(item, "_canonical", False) and (
                    type(item.op) is kind or kind is ast.Add and isinstance(item.op, ast.Sub)):
                if isinstance(item.op, ast.Sub):
                    item = ast.BinOp(item.left, ast.Add(), ast.UnaryOp(ast.USub(), item.right))
                todo += [item.right, item.left]
            else:
                operands.append(self.visit(item))
        operands.sort(key=self.shape)
        joined = operands[0]
        for operand in operands[1:]:
            joined = ast.BinOp(joined, kind(), operand)
        return ast.copy_location(joined, node)


def normalised(sources: dict, entries=(), parse=ast.parse) -> tuple:
    """(the code that computes, as text; the names that stay names; what of BUILDERS it names) of
    ``sources`` {file name: text}, the graded file first (SyntaxError if it does not parse; a
    helper that does not parse is left out: it cannot run); ``entries``: the functions the grader
    calls (empty: keep every one)."""
    trees = []
    for k, text in enumerate(sources.values()):
        try:
            trees.append(parse(text))
        except SyntaxError:
            if k == 0:
                raise
    tree = ast.Module([statement for t in trees for statement in t.body], [])
    named = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            named.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            named |= {a.name.split(".")[0] for a in n.names} | {(getattr(n, "module", None) or "").split(".")[0]}
    aliases = _aliases(tree)
    for _ in range(3):                                      # a store read only by a dead store is dead too
        tree = _Prune(aliases, _dead(tree, entries)).visit(tree)
    keep = {v.split(".")[0] for v in aliases.values()} | set(dir(builtins))
    tree = _Canonical(keep).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)), keep, sorted(named & BUILDERS)


def fingerprints(sources: dict, entries=(), parse=ast.parse) -> tuple:
    """(the winnowed hashes of the K-token runs of ``sources`` {file name: text}, graded file first;
    what of BUILDERS they name).  The tokens: keywords, operators, modules, builtins and attributes
    as they are, every other name "V", numbers "N", strings "S"."""
    text, keep, builders = normalised(sources, entries, parse)
    found = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in SKIP]
    words = ["V" if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and t.string not in keep
             and (k == 0 or found[k - 1].string != ".") else {tokenize.NUMBER: "N", tokenize.STRING: "S"}.get(
                 t.type, t.string) for k, t in enumerate(found)]
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(words[i:i + K]).encode(), digest_size=8).digest(), "big")
              for i in range(len(words) - K + 1)]
    return frozenset(min(hashes[i:i + WINDOW]) for i in range(max(1, len(hashes) - WINDOW + 1))) if hashes \
        else frozenset(), builders


def _answer(request: dict) -> dict:
    """The child's answer to {"sources": {file name: base64 bytes}, "entries": [...]}: fingerprints
    and what of BUILDERS they name, or why the files could not be read."""
    try:
        sources = {name: importlib.util.decode_source(base64.b64decode(data))
                   for name, data in request["sources"].items()}
        found, builders = fingerprints(sources, request["entries"])
        return {"fingerprints": sorted(found), "built": builders}
    except SyntaxError:
        return {"fingerprints": [], "built": []}            # it cannot run: nothing to compare
    except Exception as exc:                                # any file at all: RecursionError, MemoryError, ...
        return {"error": f"{type(exc).__name__} while reading it"}


def main() -> None:
    """The reader as a child: one request on stdin (with "cpu_seconds" and "memory_bytes"), its
    limits set before a byte of the files is read (CPU time; address space beyond what it maps
    now), its answer on stdout."""
    import resource
    request = json.load(sys.stdin)
    try:
        with open("/proc/self/status") as f:
            mapped = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:")), 0)
    except OSError:                                         # no /proc (macOS): no memory limit
        mapped = 0
    limits = [(resource.RLIMIT_CPU, int(request["cpu_seconds"]))]
    limits += [(resource.RLIMIT_AS, mapped + int(request["memory_bytes"]))] if mapped else []
    for which, value in limits:
        resource.setrlimit(which, (value, value))
    sys.setrecursionlimit(DEPTH)
    json.dump(_answer(request), sys.stdout)


if __name__ == "__main__":
    main()
