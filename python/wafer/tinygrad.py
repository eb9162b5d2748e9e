# wafer — SPDX-License-Identifier: MIT
"""tinygrad's device WAFER: tinygrad's kernels and memory on wafer.

Importing this module registers the device with tinygrad (as the module
tinygrad.runtime.ops_wafer, where tinygrad looks devices up; nothing of
tinygrad's is patched), after which DEV=WAFER (or Tensor(...,
device="WAFER")) runs tinygrad on wafer's default device — the one
wafer's own configuration picks (WAFER_BACKEND, wafer.conf); WAFER:n is
wafer's device n. pytest takes it as a plugin: pytest -p wafer.tinygrad.

- Memory: each tinygrad buffer is a wafer tensor of bytes (so wafer's
  pool, statistics, limits and traces see it); a view is the same
  tensor and a byte offset.
- Kernels: tinygrad renders them in the first program format the device
  takes, in the order CUDA C, OpenCL C, host C (asked of the device by
  building a probe program), and wafer builds, caches and launches them
  as programs. wafer's calling convention (one pointer per binding, then
  one parameter block) differs from tinygrad's (one pointer per buffer,
  one scalar per variable), so the rendered kernel's signature is
  rewritten: it takes each buffer's base tensor, and a block of 8-byte
  fields holding each buffer's byte offset and each variable's value.
  For CUDA C the device's architecture (sm_90) is read from the device
  and the programs get CUDA's include directory (cuda_fp16.h, ...).
- Copies: tinygrad's copyin and copyout are copies to and from the
  tensor through wafer.
- JIT: TinyJit's batches of kernels become wafer graphs (WaferGraph):
  recorded once per set of input buffers and variable values, replayed
  with one launch each (a CUDA graph where the plugin has the graphs
  group); a batch meeting new input buffers rebinds a graph to them.
"""
import collections
import functools
import os
import struct
import sys
import time

import wafer
from tinygrad.device import (BufferSpec, Compiled, Compiler, Device,
                             LRUAllocator, MultiBuffer, TinyELF)
from tinygrad.engine.jit import GraphRunner
from tinygrad.dtype import AddrSpace, dtypes
from tinygrad.helpers import Target
from tinygrad.renderer.cstyle import (ClangRenderer, CStyleLanguage,
                                      CUDARenderer, OpenCLRenderer)
from tinygrad.uop.ops import Ops, PatternMatcher, UPat

# Written and tested against the tinygrad that python/pyproject.toml's
# optional dependency "tinygrad" pins (pip install ./python[tinygrad]).
__all__ = ["WaferDevice", "WaferGraph", "cuda_arch", "cuda_include_dirs",
           "program_formats"]


class _WaferConvention:
    """Renders a kernel in wafer's calling convention (see the module's
    doc): the renderer's own kernel, whose argument list becomes the
    bindings and one parameter block, read back into the original
    names at the top of the body."""
    wafer_format = ""
    pointer = "unsigned char *"  # a binding's type in the new signature

    def render_kernel(self, function_name, kernel, bufs, uops, prefix=None):
        src = super().render_kernel(function_name, kernel, bufs, uops,
                                    prefix)
        sig = src.index(f" {function_name}(")
        head = sig + len(function_name) + 2
        close = src.index(") {\n", head)
        args = [a.rsplit(" ", 1) for a in src[head:close].split(", ")]
        assert len(args) == len(bufs), (args, bufs)
        fields, params, body = [], [], []
        for i, ((ctype, name), (_, (u, _))) in enumerate(zip(args, bufs)):
            fields.append(f"{self.field_type(u.addrspace != AddrSpace.ALU)} a{i};")
            if u.addrspace == AddrSpace.ALU:
                body.append(f"  {ctype} {name} = ({ctype})wafer_p.a{i};")
            else:
                params.append(f"{self.pointer}wafer_b{i}")
                body.append(f"  {ctype} {name} = ({ctype})(wafer_b{i} + wafer_p.a{i});")
        struct_name = f"wafer_params_{function_name}"
        params.append(f"struct {struct_name} wafer_p")
        line = src.rfind("\n", 0, sig) + 1
        decl = f"struct {struct_name} {{ {' '.join(fields)} }};\n"
        return (src[:line] + decl + self.entry(src[line:sig])
                + f"{function_name}(" + ", ".join(params) + ") {\n"
                + "\n".join(body) + "\n" + src[close + 4:]
                + self.wrapper(function_name, len(params) - 1, struct_name))

    def field_type(self, unsigned):
        return "unsigned long long" if unsigned else "long long"

    def entry(self, typedef):
        return typedef + " "

    def wrapper(self, name, bindings, struct_name):
        return ""

    @staticmethod
    def kernel_name(name):
        return name

    @staticmethod
    def build_options():
        """The build options of the kernels' programs (None: none)."""
        return None


class WaferCRenderer(_WaferConvention, ClangRenderer):
    """Host C for wafer's cpu plugin: the kernel is a static function that
    a WAFER_HOST_KERNEL entry calls. It is compiled by the plugin's C
    compiler ($CC, else cc, often gcc): no clang vector types, no
    __fp16."""
    wafer_format = "host-c"
    supports_float4 = False
    has_threads = False

    @property
    def global_max(self):
        return None

    def __init__(self, target):
        CStyleLanguage.__init__(self, target)
        self.compiler = Compiler()

    # A value's bit cast through a union (GNU C), which gcc's C takes;
    # __builtin_bit_cast is clang's and C++'s.
    string_rewrite = PatternMatcher([
        (UPat(Ops.BITCAST, name="x"),
         lambda ctx, x: "(__extension__({ union { "
         f"{ctx.render_type(x.src[0])} s; {ctx.render_type(x)} d; }} "
         f"wafer_u = {{ .s = ({ctx[x.src[0]]}) }}; wafer_u.d; }}))"
         if x.addrspace not in (AddrSpace.GLOBAL, AddrSpace.LOCAL)
         else None),
    ]) + ClangRenderer.string_rewrite

    def supported_dtypes(self):
        return {d for d in super().supported_dtypes() if d != dtypes.half}

    def entry(self, typedef):
        return "static void "

    @staticmethod
    def kernel_name(name):
        return "wafer_" + name

    def wrapper(self, name, bindings, struct_name):
        args = "".join(f"args->bindings[{i}], " for i in range(bindings))
        return (f"\n#include <wafer/host_kernel.h>\n"
                f"WAFER_HOST_KERNEL(wafer_{name})\n{{\n"
                f"  struct {struct_name} p;\n"
                f"  __builtin_memcpy(&p, args->params, sizeof p);\n"
                f"  if (args->begin == 0) {name}({args}p);\n}}\n")


class WaferOpenCLRenderer(_WaferConvention, OpenCLRenderer):
    wafer_format = "opencl"
    pointer = "__global uchar *"

    def __init__(self, target):
        super().__init__(target)
        self.compiler = Compiler()

    def field_type(self, unsigned):
        return "ulong" if unsigned else "long"


class WaferCUDARenderer(_WaferConvention, CUDARenderer):
    wafer_format = "cuda"

    def __init__(self, target):
        # tinygrad's CUDA renderer builds with NVRTC itself; wafer does
        # the building here, so the source is the program.
        CStyleLanguage.__init__(self, target)
        self.compiler = Compiler()
        self.tensor_cores = []

    # The dtypes whose kernels include a header of CUDA's (cuda_fp16.h,
    # cuda_bf16.h, cuda_fp8.h): NVRTC has none built in.
    HEADER_DTYPES = (dtypes.half, dtypes.bfloat16) + tuple(dtypes.fp8s)

    def supported_dtypes(self):
        have = super().supported_dtypes()
        if cuda_include_dirs():
            return have
        return {d for d in have if d not in self.HEADER_DTYPES}

    @staticmethod
    def build_options():
        return " ".join(f"-I{d}" for d in cuda_include_dirs()) or None


@functools.lru_cache(maxsize=None)
def cuda_include_dirs():
    """The directory of CUDA's headers (cuda_fp16.h, ...), which NVRTC
    does not search by itself, as a tuple: $CUDA_PATH/include (or
    $CUDA_HOME's), else the first of the toolkit's usual places that has
    them; () where none does."""
    roots = [os.environ.get(v) for v in ("CUDA_PATH", "CUDA_HOME")]
    for d in [os.path.join(r, "include") for r in roots if r] + [
            "/usr/local/cuda/include", "/opt/cuda/include", "/usr/include"]:
        if " " not in d and os.path.exists(os.path.join(d, "cuda_fp16.h")):
            return (d,)
    return ()


# Probe kernels, one per format tinygrad renders: each stores 42 in its
# binding's first float.
_PROBES = {
    "cuda": 'extern "C" __global__ void wafer_probe(float *x) { x[0] = 42; }',
    "opencl": "__kernel void wafer_probe(__global float *x) { x[0] = 42; }",
    "host-c": ("#include <wafer/host_kernel.h>\n"
               "WAFER_HOST_KERNEL(wafer_probe)\n"
               "{ ((float *)args->bindings[0])[0] = 42; }\n"),
}
_RENDERERS = [WaferCUDARenderer, WaferOpenCLRenderer, WaferCRenderer]


def program_formats(client):
    """The formats of _PROBES, most specific first, whose probe kernel
    |client|'s device builds and runs: a format counts only if a kernel
    in it computes (a driver may take a format yet run no kernel of it)."""
    if "programs" not in client.device.features:
        return []
    taken = []
    for fmt, src in _PROBES.items():
        try:
            x = client.zeros((1,), "float32")
            client.program({fmt: src}).kernel("wafer_probe", 1, 0)(x, grid=1)
            if x.numpy()[0] != 42:
                continue
        except wafer.Error:
            continue
        taken.append(fmt)
    return taken


_ARCH_PROBE = ('extern "C" __global__ void wafer_arch(int *x) '
               '{ x[0] = __CUDA_ARCH__; }')


def cuda_arch(client):
    """The architecture |client|'s device builds CUDA C for, as tinygrad
    names it ("sm_90"), asked of the device (the value of __CUDA_ARCH__
    in a kernel it builds); None where it builds or runs none."""
    try:
        x = client.zeros((1,), "int32")
        client.program({"cuda": _ARCH_PROBE}).kernel("wafer_arch", 1, 0)(
            x, grid=1)
        value = int(x.numpy()[0])
    except wafer.Error:
        return None
    return f"sm_{value // 10}" if value > 0 else None


class WaferBuffer:
    """A tinygrad buffer: |size| bytes at byte |offset| of wafer tensor
    |tensor| (uint8, one dimension)."""
    __slots__ = ("tensor", "offset", "size")

    def __init__(self, tensor, offset, size):
        self.tensor, self.offset, self.size = tensor, offset, size

    def bytes(self):
        return self.tensor[self.offset:self.offset + self.size]


class WaferAllocator(LRUAllocator):
    def __init__(self, dev):
        super().__init__(dev, supports_copy_from_disk=False,
                         supports_transfer=False)

    def _alloc(self, size, options):
        if options.external_ptr is not None:
            raise RuntimeError("WAFER: external pointers are not supported")
        try:
            t = self.dev.client.empty((size,), "uint8")
        except wafer.OutOfMemoryError as e:
            raise MemoryError(str(e)) from e
        return WaferBuffer(t, 0, size)

    def _free(self, opaque, options):
        opaque.tensor = None  # wafer frees the tensor with its last ref

    def _offset(self, buf, size, offset):
        return WaferBuffer(buf.tensor, buf.offset + offset, size)

    def _copyin(self, dest, src):
        import numpy as np
        dest.bytes()[:] = np.frombuffer(src, dtype=np.uint8)

    def _copyout(self, dest, src):
        import numpy as np
        np.frombuffer(dest, dtype=np.uint8)[:] = src.bytes().numpy()


class WaferProgram:
    def __init__(self, dev, obj: TinyELF):
        self.dev, self.name, self.signature = dev, obj.name, obj.signature
        renderer = dev.renderer
        self.program = dev.client.program(
            {renderer.wafer_format: obj.lib.decode()},
            renderer.build_options())
        # per field of the parameter block, in the signature's order:
        # (is a buffer, slot); packed by one struct (a launch is on the
        # path of every kernel tinygrad runs outside a graph)
        self.fields = [(self._is_buffer(shape), slot)
                       for _, slot, _, shape in self.signature]
        self.buffers = [slot for is_buf, slot in self.fields if is_buf]
        self.block = struct.Struct("<" + "".join(
            "Q" if is_buf else "q" for is_buf, _ in self.fields))
        self.kernel = self.program.kernel(renderer.kernel_name(obj.name),
                                          bindings=len(self.buffers),
                                          params_size=self.block.size)

    @staticmethod
    def _is_buffer(shape):
        return shape != ()

    def __call__(self, *bufs, global_size=(1, 1, 1), local_size=None,
                 vals=(), wait=False, **kw):
        nbufs = len(bufs)
        params = self.block.pack(*[
            bufs[slot].offset if is_buf else vals[slot - nbufs]
            for is_buf, slot in self.fields])
        tensors = [bufs[slot].tensor for slot in self.buffers]
        if local_size is not None:
            grid = tuple(int(g * l) for g, l in zip(global_size, local_size))
            block = tuple(int(l) for l in local_size)
        else:
            grid, block = tuple(int(g) for g in global_size), None
        if wait:
            self.dev.client.sync()
            st = time.perf_counter()
        self.kernel(*tensors, params=params, grid=grid, block=block)
        if wait:
            self.dev.client.sync()
            return time.perf_counter() - st
        return None


class WaferGraph(GraphRunner):
    """A batch of TinyJit's kernels as wafer graphs (wafer_graph(3)).

    A graph records the batch's launches with the buffers and variable
    values of one call; a replay is one wafer_graph_launch. A call with
    other values or other input buffers replays the graph recorded for
    them, or records one; once GRAPHS are kept, the least recently used
    one is rebound to the new input buffers (wafer_graph_rebind) where
    the variables and every input's offset are the same and no handle
    would stand for two, and recorded anew otherwise."""
    GRAPHS = 8

    def __init__(self, linear, input_uops=()):
        super().__init__(linear, input_uops)
        self.dev = Device[self.calls[0][2][0].device]
        # (variable values, (input, handle, offset, bytes) ...) -> graph,
        # least recently used first
        self.graphs = collections.OrderedDict()
        self.inputs = sorted({i for r in self.uop_replace for _, i in r})
        replaced = [{p for p, _ in r} for r in self.uop_replace]
        # the handles of the batch's own buffers (not inputs): a rebind
        # to one of them would merge two bindings
        self.own = {b._buf.tensor.handle
                    for (_, _, bufs, _), r in zip(self.calls, replaced)
                    for p, b in enumerate(bufs) if p not in r}

    def _input(self, input_uops, i, dev_idx=0):
        b = input_uops[i].buffer
        return (b.bufs[dev_idx] if isinstance(b, MultiBuffer) else b)._buf

    def __call__(self, input_uops, var_vals, wait=False):
        vals = tuple(var_vals[v] for v in self.vars)
        bufs = {i: self._input(input_uops, i) for i in self.inputs}
        key = (vals, tuple((i, b.tensor.handle, b.offset, b.tensor.nbytes)
                           for i, b in bufs.items()))
        entry = self.graphs.get(key)
        if entry is not None:
            self.graphs.move_to_end(key)
        else:
            entry = self._rebound(key, bufs) or self._record(
                key, input_uops, var_vals)
        if wait:
            self.dev.client.sync()
            st = time.perf_counter()
        entry.launch()
        if wait:
            self.dev.client.sync()
            return time.perf_counter() - st
        return None

    def _record(self, key, input_uops, var_vals):
        if len(self.graphs) >= self.GRAPHS:
            self.graphs.popitem(last=False)
        client = self.dev.client
        client.begin_capture()
        try:
            for (dev_idx, ast, bufs, device_vars), rt, replace in zip(
                    self.calls, self.runtimes, self.uop_replace):
                bufs = [b._buf for b in bufs]
                for pos, i in replace:
                    bufs[pos] = self._input(input_uops, i, dev_idx)
                vv = {**var_vals, **device_vars}
                global_size, local_size = ast.arg.launch_dims(vv)
                rt(*[bufs[i] for i in ast.arg.globals],
                   global_size=global_size, local_size=local_size,
                   vals=ast.arg.vals(vv))
        finally:
            graph = client.end_capture()
        self.graphs[key] = graph
        return graph

    def _rebound(self, key, bufs):
        """The least recently used graph rebound to |bufs|, or None."""
        if len(self.graphs) < self.GRAPHS:
            return None
        old_key = next(iter(self.graphs))
        if old_key[0] != key[0]:
            return None
        moves = {}  # captured handle -> the tensor it moves to
        for (_, old, off, size), (_, new, new_off, new_size), b in zip(
                old_key[1], key[1], bufs.values()):
            if (off, size) != (new_off, new_size) or \
                    moves.setdefault(old, b.tensor).handle != new:
                return None
        # a rebind moves every step using |old|: no target may be a
        # handle the graph uses for something else
        if any(t.handle != old and (t.handle in moves or t.handle in self.own)
               for old, t in moves.items()):
            return None
        graph = self.graphs.pop(old_key)
        for old, t in moves.items():
            if old != t.handle:
                graph.rebind(old, t)
        self.graphs[key] = graph
        return graph


_runtime = None


def _client(index):
    global _runtime
    if _runtime is None:
        _runtime = wafer.Runtime()
    if index == 0:
        return _runtime.client()
    return _runtime.client(_runtime.devices()[index].selector)


class WaferDevice(Compiled):
    def __init__(self, device=""):
        index = int(device.split(":")[1]) if ":" in device else 0
        self.client = _client(index)
        formats = program_formats(self.client)
        # tinygrad's CUDA renderer asks the architecture ("sm_90") what
        # it renders: dtypes, as int(arch[3:])
        arch = cuda_arch(self.client) if "cuda" in formats else None
        renderers = [r for r in _RENDERERS if r.wafer_format in formats
                     and (arch or r.wafer_format != "cuda")]
        if not renderers:
            raise RuntimeError(
                f"WAFER: {self.client.selector} builds no programs from "
                "CUDA C, OpenCL C or host C, the formats tinygrad renders")
        self.device_name = self.client.device.name
        super().__init__(device, WaferAllocator(self), renderers,
                         WaferProgram, graph=WaferGraph, arch=arch)

    def synchronize(self):
        self.client.sync()


def _register():
    import tinygrad.runtime
    module = sys.modules[__name__]
    sys.modules.setdefault("tinygrad.runtime.ops_wafer", module)
    tinygrad.runtime.ops_wafer = sys.modules["tinygrad.runtime.ops_wafer"]


_register()
