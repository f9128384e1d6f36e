"""The type stubs (tessel/__init__.pyi) describe the module as it is:
every public name, every function's parameters, every class's methods."""

import ast
import inspect
import pathlib

import tessel

STUB = pathlib.Path(tessel.__file__).with_name("__init__.pyi")


def stub_tree():
    assert STUB.exists(), "the stubs are installed beside the package"
    return ast.parse(STUB.read_text())


def params(fn):
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def test_every_public_name_has_a_stub():
    tree = stub_tree()
    names = {n.name for n in tree.body
             if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {a.asname or a.name for n in tree.body
              if isinstance(n, ast.ImportFrom) for a in n.names}
    missing = [n for n in tessel.__all__ if n not in names]
    assert not missing, missing


def test_function_signatures_match():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            real = inspect.signature(getattr(tessel, node.name))
            assert params(node) == list(real.parameters), node.name


def test_class_members_exist():
    for node in stub_tree().body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(tessel, node.name)
        for member in node.body:
            if isinstance(member, ast.FunctionDef):
                assert hasattr(cls, member.name), f"{node.name}.{member.name}"
        if node.name == "Artifact":
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and not member.name.startswith("__"):
                    real = getattr(cls, member.name)
                    if isinstance(real, property):
                        continue
                    assert params(member) == list(
                        inspect.signature(real).parameters), member.name
