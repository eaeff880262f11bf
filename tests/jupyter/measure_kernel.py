"""Figures for docs/results.md: the vela kernel's start (process start to the
first cell's result, through jupyter_client as a notebook starts it) and the
round trip of `1 + 1` (execute_request sent to execute_reply received, with
the iopub messages gathered), each over several runs; medians printed.
Further kernel names (python3: ipykernel) are measured the same way, as a
reference taken on the same machine at the same time.
Usage: VELA_BINARY=build/vela /usr/bin/python3 tests/jupyter/measure_kernel.py [starts] [round trips] [kernel...]"""
import statistics
import sys
import time

import kernel_env

kernel_env.require("jupyter_client")
kernel_env.install_kernelspec()
import jupyter_client  # noqa: E402


def first_result(kc, code, timeout=60):
    msg_id = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_result":
            return m["content"]["data"]["text/plain"]


def measure(name, starts, trips):
    start_times = []
    for _ in range(starts):
        t0 = time.perf_counter()
        km = jupyter_client.KernelManager(kernel_name=name)
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        assert first_result(kc, "1 + 1") == "2"
        start_times.append(time.perf_counter() - t0)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name=name)
    trip_times = []
    for _ in range(trips):
        t0 = time.perf_counter()
        kc.execute_interactive("1 + 1", output_hook=lambda m: None, timeout=30)
        trip_times.append(time.perf_counter() - t0)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    print(f"{name}: kernel start to first result: median {statistics.median(start_times) * 1000:.0f} ms "
          f"(min {min(start_times) * 1000:.0f}, max {max(start_times) * 1000:.0f}, {starts} starts)")
    print(f"{name}: round trip of 1 + 1: median {statistics.median(trip_times) * 1000:.2f} ms "
          f"(min {min(trip_times) * 1000:.2f}, max {max(trip_times) * 1000:.2f}, {trips} cells)")


def main():
    starts, trips = (int(a) for a in (sys.argv[1:] + ["5", "200"])[:2])
    for name in ["vela"] + sys.argv[3:]:
        measure(name, starts, trips)


if __name__ == "__main__":
    main()
