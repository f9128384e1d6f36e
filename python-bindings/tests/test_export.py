"""tessel.export's record of a module's parameters (what tesselc reads to
decide what trains; test/Training/parameter-record.test checks that side).
torch is not needed: the record reads named_parameters / named_buffers,
which a stand-in module provides here."""
import json

import tessel
from tessel import _export


class Tensor:
    def __init__(self, shape, requires_grad=True, dtype="torch.float32"):
        self.shape = shape
        self.requires_grad = requires_grad
        self.dtype = dtype


class Module:
    """named_parameters(remove_duplicate=False) as torch lists a tied
    weight: once per name, the same object."""

    def __init__(self):
        wte = Tensor((128, 64))
        self.params = [("wte.weight", wte), ("ln.weight", Tensor((64,))),
                       ("frozen.bias", Tensor((64,), requires_grad=False)),
                       ("lm_head.weight", wte)]
        self.buffers = [("rotary.inv_freq", Tensor((8,)))]

    def named_parameters(self, remove_duplicate=True):
        assert remove_duplicate is False, "ties are read with remove_duplicate=False"
        return iter(self.params)

    def named_buffers(self):
        return iter(self.buffers)


def test_record_parameters_ties_and_buffers():
    record = _export.parameter_record(Module())
    json.dumps(record)  # what export() writes into the model
    by_name = {p["name"]: p for p in record["parameters"]}
    assert list(by_name) == ["wte.weight", "ln.weight", "frozen.bias", "lm_head.weight"]
    assert by_name["lm_head.weight"]["tied_to"] == "wte.weight"
    assert by_name["wte.weight"]["tied_to"] is None
    assert by_name["frozen.bias"]["requires_grad"] is False
    assert by_name["ln.weight"]["shape"] == [64]
    assert record["buffers"] == [{"name": "rotary.inv_freq", "shape": [8],
                                  "dtype": "torch.float32"}]


def test_export_is_public():
    assert tessel.export is _export.export
    assert "export" in tessel.__all__
