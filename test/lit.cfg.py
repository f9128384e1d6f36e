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
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# `not`, `count` and FileCheck also where a RUN line starts with them.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.tessel_tools_dir, config.llvm_tools_dir]
tools = ["tessel-opt", ToolSubst("tesselc", unresolved="ignore"),
         ToolSubst("tessel-run", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
