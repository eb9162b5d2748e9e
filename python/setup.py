# wafer — SPDX-License-Identifier: MIT
#
# Builds the C extension wafer._wafer against libwafer as pkg-config
# describes it: the installed wafer.pc, or a build tree's
# wafer-uninstalled.pc when PKG_CONFIG_PATH names that build directory
# (pkg-config prefers the -uninstalled file by itself). The library's
# directory goes into the extension's run path, so an uninstalled build
# or a prefix outside the loader's path needs no LD_LIBRARY_PATH.
import glob
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "wafer"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("wafer: pkg-config is not installed")
    except subprocess.CalledProcessError as e:
        raise SystemExit("wafer: pkg-config does not find wafer (install "
                         "wafer, or set PKG_CONFIG_PATH to its build "
                         "directory or to <prefix>/lib/pkgconfig):\n"
                         + e.stderr)
    return shlex.split(out)


cflags = pkg_config("--cflags")
libs = pkg_config("--libs")
include_dirs = [f[2:] for f in cflags if f.startswith("-I")]
library_dirs = [f[2:] for f in libs if f.startswith("-L")]
libraries = [f[2:] for f in libs if f.startswith("-l")]

ext = Extension(
    "wafer._wafer",
    # One file per idea (src/wafer_py.h lists them); a new one is picked
    # up as it is.
    sources=sorted(glob.glob("src/*.c")),
    depends=["src/wafer_py.h"],
    include_dirs=include_dirs,
    library_dirs=library_dirs,
    libraries=libraries,
    runtime_library_dirs=library_dirs,
    extra_compile_args=[f for f in cflags if not f.startswith("-I")]
    + ["-std=c11", "-Wall", "-Wno-missing-field-initializers"],
)

setup(ext_modules=[ext])
