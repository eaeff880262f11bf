"""vela's Jupyter kernel checked by jupyter_kernel_test's KernelTests (kernel
info, execute result, stdout, stderr, error, completion, inspection,
is_complete, display data) and by the cases it has no test for: interrupts
and bad input, after each of which the next cell answers and a matrix made
before still holds its values."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import kernel_env

kernel_env.require("jupyter_client", "jupyter_kernel_test")
VELA = kernel_env.install_kernelspec()

import jupyter_client  # noqa: E402
import jupyter_kernel_test  # noqa: E402


class VelaKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "vela"
    language_name = "lua"
    file_extension = ".lua"

    code_hello_world = 'print("hello, world")'
    code_stderr = 'io.stderr:write("oops\\n")'
    completion_samples = [
        {"text": "zer", "matches": {"zeros"}},
        {"text": "string.fo", "matches": {"string.format"}},
        {"text": "nn.lin", "matches": {"nn.linear"}},
    ]
    complete_code_samples = ["1 + 1", "x = 1", "for i = 1, 2 do end", "?mm"]
    incomplete_code_samples = ["for i = 1, 3 do", "f(1,", "t = {1,"]
    invalid_code_samples = ["x = = 1", "1 +* 2"]
    code_generate_error = 'error("boom")'
    code_execute_result = [
        {"code": "1 + 1", "result": "2"},
        {"code": "x = 20\nx + 1", "result": "21"},
        {"code": "zeros(2, 3):shape()", "result": "2\t3"},
        {"code": '"vela"', "result": "vela"},
    ]
    code_display_data = [
        {"code": "display(zeros(2, 2))", "mime": "text/html"},
        {"code": "plot({3, 1, 2})", "mime": "image/svg+xml"},
    ]
    code_inspect_sample = "mm"


class Session:
    """One kernel and a client; run() executes a cell and gathers its reply
    and its iopub messages up to the kernel's idle status."""

    def __init__(self):
        self.km, self.kc = jupyter_client.manager.start_new_kernel(kernel_name="vela")

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def send(self, code):
        return self.kc.execute(code)

    def collect(self, msg_id, timeout=60):
        reply = self.kc.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=timeout)
        out = []
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            out.append(m)
        return reply["content"], out

    def run(self, code, timeout=60):
        return self.collect(self.send(code), timeout)

    def value(self, code):
        reply, out = self.run(code)
        assert reply["status"] == "ok", reply
        results = [m for m in out if m["msg_type"] == "execute_result"]
        return results[-1]["content"]["data"]["text/plain"] if results else None


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Session()
        # Made before every bad cell; checked after each one.
        assert cls.s.run("keep = from{{1, 2}, {3, 4}}")[0]["status"] == "ok"

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def assert_alive(self):
        self.assertEqual(self.s.value("1 + 1"), "2")
        self.assertEqual(self.s.value("keep:get(2, 1) + keep:get(1, 2)"), "5.0")

    def error_of(self, code, timeout=60):
        reply, out = self.s.run(code, timeout)
        self.assertEqual(reply["status"], "error")
        errors = [m["content"] for m in out if m["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["evalue"], reply["evalue"])
        return reply

    def test_syntax_error(self):
        r = self.error_of("x = = 1")
        self.assertEqual(r["ename"], "SyntaxError")
        self.assertIn("In[", r["evalue"])  # the cell and its line
        self.assert_alive()

    def test_error_inside_a_kernel_call(self):
        r = self.error_of("mm(1, zeros(2, 3), zeros(2, 3), 0, zeros(2, 2))")
        self.assertEqual(r["ename"], "LuaError")
        self.assertIn("mm", r["evalue"])
        self.assert_alive()

    def test_error_names_the_cells_line(self):
        r = self.error_of("local a = 1\nlocal b = nil + a")
        self.assertRegex(r["evalue"], r"In\[\d+\]:2:")
        self.assert_alive()

    def test_ten_megabytes_of_output(self):
        n = 10 * 1024 * 1024
        reply, out = self.s.run('io.write(string.rep("x", %d)) io.write("END\\n")' % n, timeout=120)
        self.assertEqual(reply["status"], "ok")
        text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertEqual(len(text), n + 4)
        self.assertTrue(text.endswith("xEND\n"))
        self.assert_alive()

    def test_interrupt_a_cell_that_never_ends(self):
        msg_id = self.s.send("while true do end")
        time.sleep(1.0)
        self.s.km.interrupt_kernel()
        reply, out = self.s.collect(msg_id, timeout=30)
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "Interrupted")
        self.assert_alive()

    def test_interrupt_a_device_wait(self):
        # Kernels queued on a Vulkan device (lavapipe where no GPU exists), the cell waiting in
        # sync(): the interrupt drops the queue, and the device works for the next cell.
        reply, out = self.s.run('ok = pcall(device, "vulkan:0")\nok')
        if self.s.value("ok") != "true":
            self.skipTest("no Vulkan device")
        self.s.run('a, c = rand(1024, 1024, 1), zeros(1024, 1024)\ndevice("cpu")')
        # Seconds of products queued by a cell that returns at once (200, fewer than the
        # stream's ring of kernels, so recording never waits), then a cell that waits for
        # them: the interrupt lands in that wait however loaded the machine is (2,000
        # smaller products in one cell took longer than the 3 s sleep to record under
        # load, and the interrupt hit the Lua loop instead).
        self.s.run("for i = 1, 200 do mm(1, a, a, 0, c) end")
        msg_id = self.s.send("sync()")
        time.sleep(1.0)
        self.s.km.interrupt_kernel()
        reply, out = self.s.collect(msg_id, timeout=120)
        self.assertEqual(reply["status"], "error")
        self.assertIn("interrupted: dropped up to", reply["evalue"])
        self.assert_alive()
        self.assertTrue(self.s.value("a:device()").startswith("vulkan:0"))
        # The product after the interrupt, against the same product on the cpu.
        self.assertEqual(self.s.value("mm(1, a, a, 0, c); ref = a:to('cpu') * a:to('cpu')\n"
                                      "math.abs(c:get(7, 9) - ref:get(7, 9)) < 1e-3"), "true")

    def test_interrupt_between_cells_is_harmless(self):
        self.s.km.interrupt_kernel()
        time.sleep(0.5)
        self.assert_alive()

    # Hundreds of epochs a second: the progress updates must not overflow the
    # iopub socket, which would drop the error and the idle status (seen with
    # every update sent: no idle after 5,498 messages).
    def test_interrupt_a_training_run(self):
        cell = (
            "local x, y = rand(8, 512, 3), zeros(1, 512)\n"
            "for j = 1, 512 do y:set(1, j, j % 2 + 1) end\n"
            "net = nn.sequential{nn.linear(8, 16, 'relu'), nn.linear(16, 2)}\n"
            "nn.fit(net, {images = x, labels = y, n = 512}, {epochs = 100000, batch = 4})"
        )
        msg_id = self.s.send(cell)
        time.sleep(3.0)
        self.s.km.interrupt_kernel()
        reply, out = self.s.collect(msg_id, timeout=60)
        self.assertEqual(reply["status"], "error", reply)
        self.assertIn("interrupted", reply["evalue"])
        self.assert_alive()


class RichOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Session()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def test_matrix_result_is_a_table(self):
        reply, out = self.s.run("from{{1, 2, 3}, {4, 5, 6}}")
        data = [m for m in out if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertTrue(data["text/plain"].startswith("matrix 2×3 float32 on cpu"))
        html = data["text/html"]
        self.assertIn("<table", html)
        self.assertIn("2×3", html)
        self.assertIn("float32", html)
        self.assertEqual(html.count("<tr>"), 2)
        self.assertEqual(html.count("<td"), 6)

    def test_large_matrix_is_summarized(self):
        reply, out = self.s.run("zeros(100, 100)")
        html = [m for m in out if m["msg_type"] == "execute_result"][0]["content"]["data"]["text/html"]
        self.assertIn("⋱", html)
        self.assertLess(html.count("<tr>"), 10)

    def test_stdout_comes_before_the_result(self):
        reply, out = self.s.run('print("first")\n42')
        kinds = [m["msg_type"] for m in out if m["msg_type"] in ("stream", "execute_result")]
        self.assertEqual(kinds, ["stream", "execute_result"])

    def test_trailing_semicolon_shows_nothing(self):
        reply, out = self.s.run("1 + 1;")
        self.assertEqual([m for m in out if m["msg_type"] == "execute_result"], [])

    def test_help_cell(self):
        reply, out = self.s.run("?mm")
        text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertIn("mm(alpha, a, b, beta, c)", text)

    def test_plot_svg_and_text(self):
        reply, out = self.s.run("plot({3, 1, 2}, {title = 'loss'})")
        shown = [m["content"]["data"] for m in out if m["msg_type"] == "display_data"]
        self.assertEqual(len(shown), 1)
        self.assertIn("<svg", shown[0]["image/svg+xml"])
        self.assertIn("polyline", shown[0]["image/svg+xml"])
        self.assertIn("loss", shown[0]["text/plain"])

    def test_images_are_pictures(self):
        reply, out = self.s.run("data.show(from{{0, 1, 1, 0}}:t(), 1)")
        shown = [m["content"]["data"] for m in out if m["msg_type"] == "display_data"]
        self.assertEqual(len(shown), 1)
        self.assertIn("<svg", shown[0]["image/svg+xml"])
        self.assertEqual([m for m in out if m["msg_type"] == "stream"], [])

    def test_plot_unknown_option(self):
        reply, out = self.s.run("plot({1, 2}, {colour = 'red'})")
        self.assertEqual(reply["status"], "error")
        self.assertIn("unknown option 'colour'", reply["evalue"])

    def test_completion_of_methods(self):
        self.s.run("m = zeros(2, 2)")
        msg_id = self.s.kc.complete("m:sha", 5)
        reply = self.s.kc.get_shell_msg(timeout=10)["content"]
        self.assertIn("m:shape", reply["matches"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (0, 5))

    def test_progress_is_one_updated_line(self):
        cell = (
            "local x, y = rand(8, 256, 3), zeros(1, 256)\n"
            "for j = 1, 256 do y:set(1, j, j % 2 + 1) end\n"
            "local net = nn.sequential{nn.linear(8, 16, 'relu'), nn.linear(16, 2)}\n"
            "nn.fit(net, {images = x, labels = y, n = 256}, {epochs = 2, batch = 8, every = 4});"
        )
        reply, out = self.s.run(cell)
        self.assertEqual(reply["status"], "ok", reply)
        shown = [m for m in out if m["msg_type"] == "display_data"]
        updates = [m for m in out if m["msg_type"] == "update_display_data"]
        self.assertEqual(len(shown), 2)  # one line per epoch
        # each epoch's final line; the updates between come at most every 0.1 s
        self.assertGreaterEqual(len(updates), 2)
        self.assertLessEqual(len(updates), 2 + 2 * 10)
        ids = {m["content"]["transient"]["display_id"] for m in shown}
        self.assertEqual({m["content"]["transient"]["display_id"] for m in updates}, ids)
        self.assertIn("epoch 2/2", updates[-1]["content"]["data"]["text/plain"])
        streams = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertNotIn("\r", streams)


class CommandLine(unittest.TestCase):
    def run_vela(self, *args):
        return subprocess.run([VELA, *args], capture_output=True, text=True, timeout=60)

    def test_kernelspec(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_vela("--install-kernel", "--prefix", d)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(d, "share/jupyter/kernels/vela/kernel.json")) as f:
                spec = json.load(f)
        self.assertEqual(spec["argv"][1:], ["--kernel", "-f", "{connection_file}"])
        self.assertTrue(os.path.samefile(spec["argv"][0], VELA))
        self.assertEqual((spec["display_name"], spec["language"], spec["interrupt_mode"]),
                         ("vela (Lua 5.4)", "lua", "signal"))

    def test_bad_command_lines(self):
        for args, words in [(["--kernel"], "--kernel needs -f CONNECTION_FILE"),
                            (["--kernel", "-f", "/nonexistent.json"], "cannot read the connection file '/nonexistent.json'"),
                            (["--install-kernel", "--bogus"], "unknown option '--bogus'"),
                            (["--install-kernel", "--prefix"], "--prefix needs a directory")]:
            r = self.run_vela(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(words, r.stderr)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write("{bad")
            f.flush()
            r = self.run_vela("--kernel", "-f", f.name)
            self.assertEqual(r.returncode, 1)
            self.assertIn("parse error", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
