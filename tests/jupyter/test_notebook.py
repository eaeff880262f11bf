"""examples/mnist.ipynb executed as CI runs it (jupyter nbconvert --to
notebook --execute), then its outputs checked: the final accuracy line, the
loss plot as SVG, a matrix as an HTML table, the progress as updated
displays. The executed notebook is kept in the build folder
(jupyter/mnist.executed.ipynb) for the browser test and as an artifact."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

import kernel_env

kernel_env.require("nbformat", "nbconvert", "nbclient")
if not shutil.which("jupyter-nbconvert"):
    print("SKIP: jupyter-nbconvert is not installed (scripts/setup.sh installs it)")
    sys.exit(kernel_env.SKIP)
kernel_env.install_kernelspec()

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/mnist.ipynb")
OUT_DIR = os.path.join(os.environ.get("VELA_BUILD_DIR", "/tmp"), "jupyter")


def joined(v):
    return "".join(v) if isinstance(v, list) else v  # a notebook may store text as a list of lines


def outputs(nb):
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = joined(out["text"])
            for mime, v in out.get("data", {}).items():
                out["data"][mime] = joined(v)
            yield out


def text_of(out):
    if out["output_type"] == "stream":
        return out["text"]
    return out.get("data", {}).get("text/plain", "")


class ExecutedNotebook(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(OUT_DIR, exist_ok=True)
        cls.path = os.path.join(OUT_DIR, "mnist.executed.ipynb")
        t0 = time.monotonic()
        subprocess.run(["jupyter-nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=900",
                        "--output-dir", OUT_DIR, "--output", "mnist.executed", SOURCE], check=True)
        cls.seconds = time.monotonic() - t0
        print(f"notebook executed in {cls.seconds:.1f} s")
        with open(cls.path) as f:
            cls.nb = json.load(f)

    def test_accuracy_line(self):
        lines = [m for o in outputs(self.nb) for m in re.findall(r"test accuracy (\d+\.\d+)%", text_of(o))]
        self.assertTrue(lines, "no 'test accuracy' line")
        self.assertGreater(float(lines[-1]), 85.0)

    def test_svg_plot(self):
        svgs = [o["data"]["image/svg+xml"] for o in outputs(self.nb) if "image/svg+xml" in o.get("data", {})]
        curves = [s for s in svgs if 'class="vela-curve"' in s]
        self.assertEqual(len(curves), 1)
        self.assertIn("polyline", curves[0])
        # data.show's digit and data.show_weights' templates are pictures too.
        self.assertEqual(len([s for s in svgs if 'class="vela-image"' in s]), 2)

    def test_html_matrix(self):
        tables = [o["data"]["text/html"] for o in outputs(self.nb) if "text/html" in o.get("data", {})]
        self.assertTrue(any("<table" in t and "uint8" in t for t in tables))
        self.assertTrue(any("<table" in t and "float32" in t for t in tables))

    def test_no_errors(self):
        self.assertEqual([o for o in outputs(self.nb) if o["output_type"] == "error"], [])
        # Nor anything on stderr (a driver's or the validation layer's messages land there).
        self.assertEqual([o["text"] for o in outputs(self.nb) if o.get("name") == "stderr"], [])

    def test_progress_is_one_line_per_epoch(self):
        # nbconvert applies update_display_data: what is left is the final line of each epoch.
        shown = [text_of(o) for o in outputs(self.nb) if o["output_type"] == "display_data"
                 and text_of(o).startswith("epoch ")]
        self.assertEqual(len(shown), 3)
        self.assertIn("epoch 3/3", shown[2])
        self.assertIn("test", shown[2])


if __name__ == "__main__":
    unittest.main(verbosity=2)
