# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TESSEL"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessel_obj_root, "test")

# Capture names must not leak between CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

config.substitutions.append(("%tessel_src", config.tessel_src_root))
# Where the example plugin and the tests' plugins are built.
config.substitutions.append(("%plugins", os.path.join(config.tessel_obj_root, "lib")))
config.substitutions.append(("%tessel_obj", config.tessel_obj_root))
# ONEDNN_MAX_CPU_ISA=AVX2 runs the suite as an AVX2-only CPU would.
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP",
                                     "ONEDNN_MAX_CPU_ISA"])
llvm_config.use_default_substitutions()
# `not`, `count` and FileCheck also where a RUN line starts with them.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.tessel_tools_dir, config.llvm_tools_dir]
tools = ["tessel-opt", ToolSubst("tesselc", unresolved="ignore"),
         ToolSubst("tessel-run", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Importer tests write ONNX models from text with Debian's python3-onnx, which
# only /usr/bin/python3 sees; without it they are reported UNSUPPORTED.
import subprocess
config.tessel_python = "/usr/bin/python3"
if os.path.exists(config.tessel_python) and subprocess.call(
        [config.tessel_python, "-c", "import onnx.parser"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("onnx-python")
config.substitutions.append(("%python", config.tessel_python))
# The Python checks' shared modules (test/Inputs: reading safetensors).
config.environment["PYTHONPATH"] = os.path.join(config.test_source_root, "Inputs")

# protoc (the build's schema compiler) decodes artifacts for tests that
# check what the exporter wrote.
import shutil
if shutil.which("protoc"):
    config.available_features.add("protoc")
config.substitutions.append((
    "%decode_program",
    "protoc --decode=tessel.artifact.Program -I %s -I %s %s" % (
        os.path.join(config.tessel_src_root, "runtime", "artifact", "schema"),
        os.path.join(config.tessel_obj_root, "op-table"),
        os.path.join(config.tessel_src_root, "runtime", "artifact", "schema",
                     "artifact.proto"))))

# What oneDNN's kernels can use: the CPU's flags, capped where
# ONEDNN_MAX_CPU_ISA asks (ONEDNN_MAX_CPU_ISA=AVX2 runs the suite as an
# AVX2-only CPU would).
try:
    with open("/proc/cpuinfo") as f:
        cpu_flags = set(f.read().split())
except OSError:
    cpu_flags = set()
isa_cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
below_avx512 = isa_cap in ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2")
avx512_core = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= cpu_flags
# CPUs with bf16 dot products, where GEMMs marked bf16_operands run on
# oneDNN's bf16 kernels (runtime/cpu/Bf16MatMul.h).
if "avx512_bf16" in cpu_flags and not below_avx512 and \
        isa_cap not in ("AVX512_CORE", "AVX512_CORE_VNNI"):
    config.available_features.add("cpu-bf16")
# oneDNN's Winograd convolutions (runtime/cpu/DnnlConv.h) need AVX-512.
if avx512_core and not below_avx512:
    config.available_features.add("dnnl-winograd")

# Tests that bind ranks to cores (bind-cores.test) pin them with taskset to
# CPUs 0 and 1, which this process must be allowed.
if shutil.which("taskset") and hasattr(os, "sched_getaffinity") and \
        {0, 1} <= os.sched_getaffinity(0):
    config.available_features.add("two-cores")

# Tests of several hosts run ranks in network namespaces joined by veth
# pairs (test/Runtime/Inputs/netns_hosts.py): they need root and iproute2's
# `ip`; without them they are UNSUPPORTED, and lit says why.
config.substitutions.append((
    "%netns-hosts", "%s %s" % (config.tessel_python, os.path.join(
        config.tessel_src_root, "test", "Runtime", "Inputs", "netns_hosts.py"))))
if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("ip"):
    config.available_features.add("netns")
else:
    lit_config.note("tests marked REQUIRES: netns (several hosts as network "
                    "namespaces) are skipped: they need root and iproute2's "
                    "`ip`")
