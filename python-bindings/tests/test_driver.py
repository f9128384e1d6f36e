"""tessel.compile runs the compile driver in this process without global
state: two threads compile at once, each getting its own result, and an
error raises with the text tesselc prints."""

import threading

import pytest

import tessel
from conftest import MODELS, run_cli

MLP = MODELS / "mlp" / "model.onnx"
GPT2 = MODELS / "gpt2_tiny" / "model.onnx"


def test_two_threads_compile_at_once(tmp_path, tesselc):
    # The command line's reports, one process each: the reference.
    cli = {
        "mlp": run_cli(tesselc, MLP, "--mesh", "dp=2", "--plan", "dp",
                       "--report", "-o", tmp_path / "mlp.tsl").stdout,
        "gpt2": run_cli(tesselc, GPT2, "--mesh", "dp=2,tp=2", "--plan",
                        "megatron", "--report", "-o",
                        tmp_path / "gpt2.tsl").stdout,
    }
    partitioned = tessel.compile(GPT2, mesh={"dp": 2, "tp": 2},
                                 plan="megatron", emit="partitioned").text()
    jobs = {
        "mlp": lambda: tessel.compile(MLP, mesh={"dp": 2}, plan="dp"),
        "gpt2": lambda: tessel.compile(GPT2, mesh={"dp": 2, "tp": 2},
                                       plan="megatron"),
        "gpt2-ir": lambda: tessel.compile(GPT2, mesh={"dp": 2, "tp": 2},
                                          plan="megatron",
                                          emit="partitioned"),
    }
    start = threading.Barrier(len(jobs))
    results, errors = {}, []

    def work(name):
        try:
            start.wait()
            results[name] = [jobs[name]() for _ in range(3)]
        except BaseException as e:  # noqa: B902 - reported below
            errors.append((name, e))

    threads = [threading.Thread(target=work, args=(n,)) for n in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a compile hung"
    assert not errors, errors
    for name in ("mlp", "gpt2"):
        for art in results[name]:
            assert art.report() == cli[name], name
            assert art.num_ranks == (2 if name == "mlp" else 4)
    for module in results["gpt2-ir"]:
        assert module.text() == partitioned


def test_compile_error_raises_the_named_text():
    with pytest.raises(tessel.CompileError) as e:
        tessel.compile(MLP, train=dict(precision="fp8"))
    assert str(e.value) == ("tesselc: error: unknown --precision 'fp8' "
                            "(fp32, bf16, fp16)")
    with pytest.raises(tessel.CompileError) as e:
        tessel.compile(MLP, mesh={"dp": 2}, plan="dp",
                       train=dict(plugin="zero9"))
    assert str(e.value) == (
        "tesselc: error: unknown --plugin 'zero9' (known: ddp, zero1, zero2, "
        "fsdp, gemini, hybrid; tesselc --list-plugins)")


@pytest.mark.parametrize("flags", [
    ["--lr=abc"],
    ["--warmup-steps", "x"],
    ["--fsdp-prefetch=1.5"],
    ["--train=maybe"],
    ["--loss", "mse", "--loss=nope", "--train"],
    ["--mesh"],
])
def test_flag_errors_are_the_command_lines(flags, tmp_path, tesselc):
    # tessel.compile adds --report after the flags for an artifact: so does
    # the command line here (["--mesh"] takes it as its value in both).
    cli = run_cli(tesselc, MLP, "-o", tmp_path / "o.tsl", *flags, "--report",
                  check=False)
    assert cli.returncode == 1
    with pytest.raises(tessel.CompileError) as e:
        tessel.compile(MLP, flags=flags)
    assert str(e.value) == cli.stderr.strip()


def test_plan_auto_chooses_as_the_command_line(tmp_path, tesselc):
    # --plan=auto from Python: the same choice and table as tesselc's.
    cluster = MODELS.parent / "Predict" / "Inputs" / "round.yaml"
    cli = run_cli(tesselc, GPT2, "--train", "--lr", "1e-3", "--plan=auto",
                  "--devices", "2",
                  "--cluster", cluster, "-o", tmp_path / "cli.tsl").stdout
    art = tessel.compile(GPT2, plan="auto", train=dict(lr=1e-3),
                         flags=["--devices", "2", "--cluster", str(cluster)])
    chosen = [line for line in cli.splitlines() if line.startswith("chosen:")]
    assert len(chosen) == 1
    assert chosen[0] in art.report()
    assert art.num_ranks == 2
