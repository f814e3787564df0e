"""The method names spelled out in intel/lsp/methods.py are lsprotocol's."""

from lsprotocol import types

from codebelt.intel.lsp import methods


def test_every_method_name_is_lsprotocols():
    names = [n for n in dir(methods) if n.isupper()]
    assert len(names) >= 20
    for name in names:
        assert getattr(methods, name) == getattr(types, name), name
