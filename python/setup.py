# wafer — SPDX-License-Identifier: MIT
#
# Builds the C extension wafer._wafer against libwafer as pkg-config
# describes it: the installed wafer.pc, or a build tree's
# wafer-uninstalled.pc when PKG_CONFIG_PATH names that build directory
# (pkg-config prefers the -uninstalled file by itself). The library's
# directory goes into the extension's run path, so an uninstalled build
# or a prefix outside the loader's path needs no LD_LIBRARY_PATH.
import glob
import os
import shlex
import subprocess

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))


def search_path():
    """PKG_CONFIG_PATH for pkg-config. pip runs this file in another
    directory than the user's (a copy, or python/ itself), so relative
    entries ("build") are made absolute against the directory pip was
    started in ($PWD, which the shell set and pip does not change). With
    none given and no installed wafer, the build tree beside this
    source tree (../build) is tried last."""
    cwd = os.environ.get("PWD") or os.getcwd()
    given = os.environ.get("PKG_CONFIG_PATH", "")
    dirs = [d if os.path.isabs(d) else os.path.join(cwd, d)
            for d in given.split(os.pathsep) if d]
    beside = os.path.join(here, os.pardir, "build")
    if os.path.exists(os.path.join(beside, "wafer-uninstalled.pc")):
        fallback = os.path.abspath(beside)
    else:
        fallback = None
    return os.pathsep.join(dirs), fallback


pc_path, pc_fallback = search_path()


def pkg_config(*args):
    env = dict(os.environ, PKG_CONFIG_PATH=pc_path)
    try:
        if pc_fallback and subprocess.run(["pkg-config", "--exists", "wafer"],
                                          env=env).returncode != 0:
            env["PKG_CONFIG_PATH"] = pc_fallback
        out = subprocess.run(["pkg-config", *args, "wafer"], check=True,
                             capture_output=True, text=True,
                             env=env).stdout
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

def has_dlpack():
    """Whether libwafer has the DLPack calls (wafer/dlpack.h: built only
    where DLPack's header was found): a test program compiled and
    linked against it."""
    import os
    import sysconfig
    import tempfile
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("#include <wafer/dlpack.h>\n"
                    "int main(void) { return wafer_tensor_to_dlpack(0, 0, 0)"
                    " == WAFER_OK; }\n")
        r = subprocess.run(cc + [src, "-o", os.path.join(d, "t")] + cflags
                           + libs, capture_output=True)
    return r.returncode == 0


dlpack = has_dlpack()
print("wafer: DLPack %s in libwafer" % ("found" if dlpack else "not found"))

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
    define_macros=[("WP_HAVE_DLPACK", "1")] if dlpack else [],
    extra_compile_args=[f for f in cflags if not f.startswith("-I")]
    + ["-std=c11", "-Wall", "-Wno-missing-field-initializers"],
)

setup(ext_modules=[ext])
