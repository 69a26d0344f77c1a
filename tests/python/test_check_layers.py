"""scripts/check_layers.py: src/ passes, and the check fails on an upward include, naming it.

The second half is what makes the first mean something: a synthetic tree with one include of each
kind shows that the script accepts downward includes and refuses upward ones, leaf layers that
reach past core, includes of bench/ from anywhere but cli/main.cpp, and folders that are no layer.
"""
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layers.py"


def run(src: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(src)], capture_output=True, text=True)


def tree(files: dict) -> tempfile.TemporaryDirectory:
    tmp = tempfile.TemporaryDirectory()
    for rel, text in files.items():
        path = pathlib.Path(tmp.name) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp


DOWNWARD = {
    "core/error.h": "#pragma once\n",
    "core/cuda/cuda_check.h": '#include "core/error.h"\n',
    "sampling/params.h": '#include "core/error.h"\n',
    "tokenizer/tokenizer.h": '#include "core/error.h"\n',
    "grammar/matcher.h": '#include "core/error.h"\n#include "tokenizer/tokenizer.h"\n',
    "attention/metadata.h": '#include "core/error.h"\n',
    "backend/backend.h": '#include "attention/metadata.h"\n#include "sampling/params.h"\n',
    "runner/step_io.h": '#include "sampling/params.h"\n',
    "engine/engine.h": '#include "runner/step_io.h"\n#include "grammar/matcher.h"\n#include <vector>\n',
    "cli/main.cpp": '#include "bench/bench_commands.h"\n#include "engine/engine.h"\n',
}


class CheckLayers(unittest.TestCase):
    def test_the_real_tree_passes(self):
        result = run(ROOT / "src")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_downward_includes_pass(self):
        with tree(DOWNWARD) as src:
            result = run(pathlib.Path(src))
            self.assertEqual(result.returncode, 0, result.stdout)

    def test_each_kind_of_violation_fails_naming_file_and_line(self):
        cases = {
            "backend/cuda/bad.cu": ('#include "core/error.h"\n#include "runner/step_io.h"\n',
                                    'src/backend/cuda/bad.cu:2: #include "runner/step_io.h": runner/ is not below backend/'),
            "attention/bad.h": ('#include "backend/backend.h"\n', "backend/ is not below attention/"),
            "tokenizer/bad.cpp": ('#include "sampling/params.h"\n', "tokenizer/ depends on core/ only"),
            "grammar/bad.cpp": ('#include "sampling/params.h"\n', "grammar/ depends on core/ and tokenizer/ only"),
            "server/bad.cpp": ('#include "bench/serve.h"\n', "only src/cli/main.cpp includes bench/"),
            "lab/probe.cpp": ("int x;\n", "src/lab/: not a layer of src/"),
        }
        for rel, (text, message) in cases.items():
            with self.subTest(rel), tree({**DOWNWARD, rel: text}) as src:
                result = run(pathlib.Path(src))
                self.assertEqual(result.returncode, 1, result.stdout)
                self.assertIn(message, result.stdout)


if __name__ == "__main__":
    unittest.main()
