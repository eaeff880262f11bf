"""The vela kernel as the tests see it: the kernelspec installed by the
binary under test (vela --install-kernel --prefix) into a temporary
directory on JUPYTER_PATH, so the tests never touch the machine's own
kernelspecs. VELA_BINARY names the binary (CTest sets it)."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77  # CTest's SKIP_RETURN_CODE: a Python package the test needs is absent


def require(*modules):
    """Exits with SKIP, saying which, when a module is not installed."""
    for m in modules:
        try:
            __import__(m)
        except ImportError:
            print(f"SKIP: python module {m} is not installed (scripts/setup.sh installs it)")
            sys.exit(SKIP)


def install_kernelspec():
    vela = os.environ.get("VELA_BINARY", os.path.join(os.path.dirname(__file__), "../../build/vela"))
    prefix = tempfile.mkdtemp(prefix="vela-kernelspec-")
    atexit.register(shutil.rmtree, prefix, True)
    subprocess.run([vela, "--install-kernel", "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    # One device for every run: the tests check the kernel, not the drivers.
    os.environ.setdefault("VELA_DEVICE", "cpu")
    return vela
