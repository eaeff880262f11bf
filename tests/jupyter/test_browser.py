"""The executed example notebook in a real browser: jupyter notebook on
127.0.0.1 (as root in CI: --allow-root), headless Chromium loads the page,
and the rendered page (its DOM after the notebook's scripts ran) must hold
the loss plot as an SVG curve and the matrix as a table, not just a page. The
screenshot is kept as build/jupyter/mnist.png. Needs the executed notebook
that jupyter.notebook leaves in the build folder (CTest orders them)."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import kernel_env

OUT_DIR = os.path.join(os.environ.get("VELA_BUILD_DIR", "/tmp"), "jupyter")
NOTEBOOK = os.path.join(OUT_DIR, "mnist.executed.ipynb")

kernel_env.require("notebook", "nbformat")
if not shutil.which("chromium"):
    print("SKIP: chromium is not installed (scripts/setup.sh installs it)")
    sys.exit(kernel_env.SKIP)
kernel_env.install_kernelspec()

import nbformat  # noqa: E402
import nbformat.sign  # noqa: E402

# As the machine notes say: without the background-networking flags Chromium
# keeps trying hosts a closed network refuses.
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", "--window-size=1280,3600", "--virtual-time-budget=20000"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A failure, not a skip: CTest runs jupyter.notebook first (a fixture), so a missing file is a fault.
        assert os.path.exists(NOTEBOOK), f"{NOTEBOOK} is missing: the test jupyter.notebook writes it"
        cls.port = free_port()
        cls.home = tempfile.mkdtemp(prefix="vela-notebook-")
        # A trusted notebook shows its SVG and HTML as they are (an untrusted one is sanitized):
        # signed in a data folder of the test's own, which the server then reads.
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=cls.home, JUPYTER_CONFIG_DIR=cls.home, JUPYTER_DATA_DIR=cls.home)
        notary = nbformat.sign.NotebookNotary(data_dir=cls.home)
        notary.sign(nbformat.read(NOTEBOOK, as_version=4))
        cls.server = subprocess.Popen(
            [sys.executable, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={cls.port}",
             "--NotebookApp.token=", "--NotebookApp.password=", f"--notebook-dir={OUT_DIR}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{cls.port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/api", timeout=1)
                break
            except OSError:
                time.sleep(0.3)
        cls.url = base + "/notebooks/mnist.executed.ipynb"
        cls.profile = tempfile.mkdtemp(prefix="vela-chromium-")

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        shutil.rmtree(cls.home, True)
        shutil.rmtree(cls.profile, True)

    def chromium(self, *args):
        return subprocess.run(CHROMIUM + [f"--user-data-dir={self.profile}", *args, self.url],
                              capture_output=True, text=True, timeout=180)

    def test_plot_and_table_rendered(self):
        dom = self.chromium("--dump-dom").stdout
        self.assertIn("output_area", dom, "the notebook's outputs were not rendered")
        # The loss curve: our SVG inline in an output, with its polyline.
        self.assertRegex(dom, r'<svg[^>]*>(.|\n)*class="vela-curve"')
        # A matrix: the HTML table with its header.
        self.assertIn("vela-matrix", dom)
        self.assertRegex(dom, r"<table[^>]*>(.|\n)*<td[^>]*>")
        self.assertIn("test accuracy", dom)

    def test_screenshot(self):
        shot = os.path.join(OUT_DIR, "mnist.png")
        if os.path.exists(shot):
            os.remove(shot)
        self.chromium(f"--screenshot={shot}")
        self.assertTrue(os.path.exists(shot))
        self.assertGreater(os.path.getsize(shot), 20000)  # a page with content, not a blank one


if __name__ == "__main__":
    unittest.main(verbosity=2)
