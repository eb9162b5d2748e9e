#!/usr/bin/env python3
# wafer — SPDX-License-Identifier: MIT
"""dlpack-check.py: DLPack exchange between wafer and the frameworks, both
ways, zero-copy checked by pointer, through ctypes on libwafer (a dev check:
the Python package does not offer DLPack yet).

On the GPU machine (wafer's cuda plugin; PyTorch and CuPy where installed):

    ./build/uninstalled python3 dev/dlpack-check.py --device cuda

Here, on cpu (NumPy; PyTorch's cpu tensors where installed):

    ./build/uninstalled /usr/bin/python3 dev/dlpack-check.py --device cpu

For each framework: its tensor into wafer (dense, transposed, a slice that
starts off the allocation's alignment), used by a wafer operation and
written by wafer, the framework's deleter run by wafer's last release;
wafer's tensor into the framework (dense, transposed), the framework
reading wafer's memory, wafer's deleter run when the framework lets go;
and a round trip wafer -> framework -> wafer onto the same memory. One line
per check ("ok", "FAIL", "skip" with the reason); exit status 1 on any
failure. --lib names libwafer (default: the build tree's
build/.libs/libwafer.so.0, else the installed libwafer.so.0).
"""
import argparse
import ctypes as C
import gc
import os
import sys

#--- libwafer through ctypes ---------------------------------------------------

MAX_RANK = 8
DTYPE_F32 = 1
OK = 0
NATIVE_KINDS = {1: "host-pointer", 2: "cuda-pointer", 3: "opencl-mem",
                4: "levelzero-pointer"}
DL_CPU, DL_CUDA, DL_ONEAPI = 1, 2, 14


class Handle(C.Structure):
    _fields_ = [("bits", C.c_uint64)]


class Tensor(C.Structure):
    _fields_ = [("handle", Handle), ("dtype", C.c_int), ("rank", C.c_uint32),
                ("shape", C.c_uint64 * MAX_RANK),
                ("strides", C.c_uint64 * MAX_RANK), ("offset", C.c_uint64),
                ("strided", C.c_uint32), ("reserved", C.c_uint32)]


class NativeBuffer(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("kind", C.c_int),
                ("backend", C.c_char_p), ("address", C.c_uint64),
                ("object", C.c_void_p), ("offset", C.c_size_t),
                ("size", C.c_size_t), ("context", C.c_void_p),
                ("device_ordinal", C.c_int)]


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8),
                ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("device", DLDevice),
                ("ndim", C.c_int), ("dtype", DLDataType),
                ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)),
                ("byte_offset", C.c_uint64)]


class DLManagedTensor(C.Structure):
    pass


DELETER = C.CFUNCTYPE(None, C.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor),
                            ("manager_ctx", C.c_void_p),
                            ("deleter", DELETER)]


def default_lib():
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "build", ".libs", "libwafer.so.0")
    return built if os.path.exists(built) else "libwafer.so.0"


class Wafer:
    def __init__(self, path, selector):
        lib = self.lib = C.CDLL(path)
        vp, st = C.c_void_p, C.c_int
        sig = {
            "wafer_runtime_open": (st, [vp, C.POINTER(vp)]),
            "wafer_runtime_close": (None, [vp]),
            "wafer_client_open": (st, [vp, C.c_char_p, vp, C.POINTER(vp)]),
            "wafer_client_close": (st, [vp]),
            "wafer_last_error": (C.c_char_p, []),
            "wafer_status_string": (C.c_char_p, [st]),
            "wafer_sync": (st, [vp]),
            "wafer_tensor_create": (st, [vp, C.c_int, C.c_uint32,
                                         C.POINTER(C.c_uint64), vp,
                                         C.POINTER(Tensor)]),
            "wafer_tensor_read": (st, [vp, C.POINTER(Tensor), vp,
                                       C.c_size_t]),
            "wafer_tensor_release": (st, [vp, C.POINTER(Tensor)]),
            "wafer_tensor_transpose": (st, [C.POINTER(Tensor), C.c_uint32,
                                            C.c_uint32, C.POINTER(Tensor)]),
            "wafer_op_unary": (st, [vp, C.c_int, C.POINTER(Tensor), C.c_int,
                                    C.POINTER(Tensor)]),
            "wafer_write": (st, [vp, Handle, C.c_size_t, vp, C.c_size_t]),
            "wafer_handle_references": (st, [vp, Handle,
                                             C.POINTER(C.c_uint32)]),
            "wafer_handle_native": (st, [vp, Handle,
                                         C.POINTER(NativeBuffer)]),
            "wafer_tensor_to_dlpack": (st, [vp, C.POINTER(Tensor),
                                            C.POINTER(C.POINTER(
                                                DLManagedTensor))]),
            "wafer_tensor_from_dlpack": (st, [vp, vp, C.POINTER(Tensor)]),
        }
        for name, (res, args) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        self.rt, self.c = vp(), vp()
        self.check(lib.wafer_runtime_open(None, C.byref(self.rt)),
                   "wafer_runtime_open")
        self.check(lib.wafer_client_open(self.rt, selector.encode(), None,
                                         C.byref(self.c)),
                   "wafer_client_open(%s)" % selector)

    def check(self, status, what):
        if status != OK:
            raise RuntimeError("%s: %s: %s" % (
                what, self.lib.wafer_status_string(status).decode(),
                self.lib.wafer_last_error().decode()))

    def close(self):
        self.check(self.lib.wafer_client_close(self.c), "close")
        self.lib.wafer_runtime_close(self.rt)

    def native(self, h):
        nb = NativeBuffer(struct_size=C.sizeof(NativeBuffer))
        self.check(self.lib.wafer_handle_native(self.c, h, C.byref(nb)),
                   "wafer_handle_native")
        return nb

    def first_byte(self, t):
        """The address of the view's first element."""
        return self.native(t.handle).address + t.offset * 4

    def refs(self, h):
        n = C.c_uint32()
        self.check(self.lib.wafer_handle_references(self.c, h, C.byref(n)),
                   "references")
        return n.value

    def create(self, shape, values):
        t = Tensor()
        sh = (C.c_uint64 * len(shape))(*shape)
        buf = (C.c_float * len(values))(*values)
        self.check(self.lib.wafer_tensor_create(self.c, DTYPE_F32, len(shape),
                                                sh, buf, C.byref(t)),
                   "tensor_create")
        return t

    def read(self, t):
        n = 1
        for d in range(t.rank):
            n *= t.shape[d]
        buf = (C.c_float * n)()
        self.check(self.lib.wafer_tensor_read(self.c, C.byref(t), buf,
                                              C.sizeof(buf)), "tensor_read")
        return list(buf)

    def release(self, t):
        self.check(self.lib.wafer_tensor_release(self.c, C.byref(t)),
                   "release")
        self.check(self.lib.wafer_sync(self.c), "sync")


#--- PyCapsules (the Python side of DLPack) -----------------------------------

api = C.pythonapi
CAPSULE_DESTRUCTOR = C.CFUNCTYPE(None, C.c_void_p)
api.PyCapsule_New.restype = C.py_object
api.PyCapsule_New.argtypes = [C.c_void_p, C.c_char_p, CAPSULE_DESTRUCTOR]
api.PyCapsule_GetPointer.restype = C.c_void_p
api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
api.PyCapsule_SetName.restype = C.c_int
api.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
# The same two on a capsule given as a raw PyObject * (its destructor's).
_raw_is_valid = C.PYFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p)(
    ("PyCapsule_IsValid", api))
_raw_get_pointer = C.PYFUNCTYPE(C.c_void_p, C.c_void_p, C.c_char_p)(
    ("PyCapsule_GetPointer", api))
# The names live as long as the module (a capsule keeps the pointer).
DLTENSOR = b"dltensor"
USED = b"used_dltensor"


def _unconsumed(capsule):
    """A capsule nobody consumed: its tensor goes back (the protocol)."""
    if _raw_is_valid(capsule, DLTENSOR):
        m = C.cast(_raw_get_pointer(capsule, DLTENSOR),
                   C.POINTER(DLManagedTensor))
        m.contents.deleter(m)


_unconsumed_fn = CAPSULE_DESTRUCTOR(_unconsumed)


class Exported:
    """wafer's tensor as a DLPack producer (__dlpack__, __dlpack_device__)."""

    def __init__(self, managed):
        self.m = managed
        dev = managed.contents.dl_tensor.device
        self.device = (dev.device_type, dev.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        # wafer_tensor_to_dlpack finished wafer's work already: any
        # consumer stream may read it.
        m, self.m = self.m, None
        return api.PyCapsule_New(C.cast(m, C.c_void_p), DLTENSOR,
                                 _unconsumed_fn)

    def __dlpack_device__(self):
        return self.device


# The producers' own deleters, by tensor address, while wafer holds them.
_deleters = {}


@DELETER
def _deleter_with_gil(m):
    # A ctypes callback holds the GIL: the producer's deleter may drop a
    # Python reference (NumPy before 2.0 does, without taking the GIL),
    # and wafer calls it on whichever thread ran the last release (the
    # runner's on the mpsc channel).
    _deleters.pop(C.addressof(m.contents))(m)


def import_capsule(w, capsule):
    """The consumer's side: wafer takes the capsule's tensor."""
    t = Tensor()
    ptr = api.PyCapsule_GetPointer(capsule, DLTENSOR)
    m = C.cast(ptr, C.POINTER(DLManagedTensor))
    # A copy of the pointer: the field's own object reads the struct.
    own = C.cast(m.contents.deleter, C.c_void_p).value
    own = DELETER(own) if own else None
    if own:
        _deleters[ptr] = own
        m.contents.deleter = _deleter_with_gil
    status = w.lib.wafer_tensor_from_dlpack(w.c, ptr, C.byref(t))
    if status != OK:
        if own:
            m.contents.deleter = _deleters.pop(ptr)
        w.check(status, "wafer_tensor_from_dlpack")
    api.PyCapsule_SetName(capsule, USED)  # wafer calls the deleter now
    return t


#--- the frameworks -------------------------------------------------------------

class Framework:
    """name, make(values, shape), ptr(x), values(x), strides(x) in
    elements, holders(x) (a count the DLPack deleter drops, or None),
    sync(), from_dlpack(obj)."""


def numpy_fw():
    import numpy as np
    f = Framework()
    f.name = "numpy"
    f.make = lambda v, shape: np.array(v, dtype=np.float32).reshape(shape)
    f.ptr = lambda x: x.__array_interface__["data"][0]
    f.values = lambda x: [float(e) for e in x.ravel()]
    f.strides = lambda x: tuple(s // x.itemsize for s in x.strides)
    f.holders = lambda x: sys.getrefcount(x)
    f.sync = lambda: None
    f.from_dlpack = np.from_dlpack
    f.capsule = lambda x: x.__dlpack__()
    return f


def torch_fw(device):
    import torch
    import torch.utils.dlpack
    f = Framework()
    f.name = "torch (%s)" % device
    dev = "cuda" if device == "cuda" else "cpu"
    f.make = lambda v, shape: torch.tensor(v, dtype=torch.float32,
                                           device=dev).reshape(shape)
    f.ptr = lambda x: x.data_ptr()
    f.values = lambda x: [float(e) for e in x.cpu().reshape(-1).tolist()]
    f.strides = lambda x: tuple(x.stride())
    use = getattr(torch._C, "_storage_Use_Count", None)
    f.holders = ((lambda x: use(x.untyped_storage()._cdata)) if use
                 else (lambda x: None))
    f.sync = (torch.cuda.synchronize if dev == "cuda" else (lambda: None))
    f.from_dlpack = torch.utils.dlpack.from_dlpack
    f.capsule = lambda x: torch.utils.dlpack.to_dlpack(x)
    return f


def cupy_fw():
    import cupy
    f = Framework()
    f.name = "cupy"
    f.make = lambda v, shape: cupy.asarray(v, dtype=cupy.float32).reshape(shape)
    f.ptr = lambda x: x.data.ptr
    f.values = lambda x: [float(e) for e in cupy.asnumpy(x).ravel()]
    f.strides = lambda x: tuple(s // x.itemsize for s in x.strides)
    f.holders = lambda x: sys.getrefcount(x)
    f.sync = cupy.cuda.Device().synchronize
    f.from_dlpack = cupy.from_dlpack
    f.capsule = lambda x: x.__dlpack__()
    return f


#--- the checks -----------------------------------------------------------------

failures = 0


def report(cond, what, detail=""):
    global failures
    if cond:
        print("ok   %s" % what)
    else:
        failures += 1
        print("FAIL %s%s" % (what, (": " + detail) if detail else ""))


def skip(what, why):
    print("skip %s: %s" % (what, why))


def into_wafer(w, f):
    """The framework's tensors into wafer."""
    v = [float(i) - 2.5 for i in range(6)]
    x = f.make(v, (2, 3))
    f.sync()
    before = f.holders(x)
    cap = f.capsule(x)
    t = import_capsule(w, cap)
    del cap
    during = f.holders(x)
    report(w.first_byte(t) == f.ptr(x),
           "%s -> wafer: same memory (0x%x)" % (f.name, f.ptr(x)),
           "wafer's is 0x%x" % w.first_byte(t))
    y = Tensor()
    w.check(w.lib.wafer_op_unary(w.c, 0, C.byref(t), 0, C.byref(y)), "neg")
    report(w.read(y) == [-e for e in v],
           "%s -> wafer: neg in wafer of the framework's values" % f.name)
    w.release(y)
    nine = C.c_float(9)  # element 4 of the view (offset: its alignment)
    w.check(w.lib.wafer_write(w.c, t.handle, (t.offset + 4) * 4,
                              C.byref(nine), 4), "write")
    w.check(w.lib.wafer_sync(w.c), "sync")
    report(f.values(x)[4] == 9,
           "%s -> wafer: wafer's write seen by the framework" % f.name)
    w.release(t)
    gc.collect()
    after = f.holders(x)
    if before is None or during == before:
        skip("%s -> wafer: the framework's deleter ran" % f.name,
             "no count of the framework's that its export raises")
    else:
        report(during > before and after == before,
               "%s -> wafer: wafer's last release ran the framework's "
               "deleter (holders %s, imported %s, released %s)"
               % (f.name, before, during, after))

    xt = x.T
    cap = f.capsule(xt)
    t = import_capsule(w, cap)
    del cap
    report(t.strided == 1 and (t.strides[0], t.strides[1]) == (1, 3) and
           w.read(t) == f.values(xt),
           "%s -> wafer: the transpose as a strided view" % f.name,
           "strided %d strides %d,%d" % (t.strided, t.strides[0],
                                         t.strides[1]))
    w.release(t)

    flat = f.make([float(i) for i in range(64)], (64,))
    s = flat[3:]
    cap = f.capsule(s)
    t = import_capsule(w, cap)
    del cap
    report(w.first_byte(t) == f.ptr(s) and w.read(t)[:2] == [3.0, 4.0],
           "%s -> wafer: a slice starting 12 bytes in (view offset %d)"
           % (f.name, t.offset), "wafer's first element 0x%x, theirs 0x%x"
           % (w.first_byte(t), f.ptr(s)))
    w.release(t)


def from_wafer(w, f):
    """wafer's tensors into the framework, and back."""
    v = [float(i) * 0.5 for i in range(6)]
    t = w.create((2, 3), v)
    m = C.POINTER(DLManagedTensor)()
    w.check(w.lib.wafer_tensor_to_dlpack(w.c, C.byref(t), C.byref(m)),
            "to_dlpack")
    y = f.from_dlpack(Exported(m))
    report(f.ptr(y) == w.first_byte(t),
           "wafer -> %s: same memory (0x%x)" % (f.name, w.first_byte(t)),
           "theirs is 0x%x" % f.ptr(y))
    report(f.values(y) == v, "wafer -> %s: the framework reads wafer's "
                             "values" % f.name)
    report(w.refs(t.handle) == 2, "wafer -> %s: the export holds a "
                                  "reference" % f.name)

    # Back into wafer: the framework's export of wafer's memory.
    try:
        cap = f.capsule(y)
    except BufferError as e:  # NumPy: what DLPack gave it is read-only
        skip("wafer -> %s -> wafer" % f.name, "%s refuses: %s" % (f.name, e))
    else:
        u = import_capsule(w, cap)
        del cap
        report(w.first_byte(u) == w.first_byte(t),
               "wafer -> %s -> wafer: the same memory again" % f.name)
        w.release(u)
    del y
    gc.collect()
    f.sync()
    w.check(w.lib.wafer_sync(w.c), "sync")
    report(w.refs(t.handle) == 1,
           "wafer -> %s: letting go ran wafer's deleter" % f.name,
           "%d references left" % w.refs(t.handle))

    tt = Tensor()
    w.check(w.lib.wafer_tensor_transpose(C.byref(t), 0, 1, C.byref(tt)),
            "transpose")
    w.check(w.lib.wafer_tensor_to_dlpack(w.c, C.byref(tt), C.byref(m)),
            "to_dlpack")
    y = f.from_dlpack(Exported(m))
    report(f.strides(y) == (1, 3) and f.values(y) == w.read(tt),
           "wafer -> %s: the transpose, strides (1, 3)" % f.name,
           "strides %s" % (f.strides(y),))
    del y
    gc.collect()
    w.release(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=default_lib())
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--ordinal", type=int, default=0)
    args = ap.parse_args()
    selector = "%s:%d" % (args.device, args.ordinal)
    w = Wafer(args.lib, selector)
    print("# wafer: %s on %s" % (args.lib, selector))

    makers = ([("torch", lambda: torch_fw("cuda")), ("cupy", cupy_fw)]
              if args.device == "cuda" else
              [("numpy", numpy_fw), ("torch", lambda: torch_fw("cpu"))])
    for name, make in makers:
        try:
            f = make()
        except ImportError as e:
            skip(name, "not importable (%s)" % e)
            continue
        for check in (into_wafer, from_wafer):
            try:
                check(w, f)
            except Exception as e:  # a refusal: report it, go on
                report(False, "%s: %s" % (f.name, check.__doc__.strip()),
                       "%s: %s" % (type(e).__name__, e))
    w.close()
    print("# %s" % ("all passed" if not failures else
                    "%d failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
