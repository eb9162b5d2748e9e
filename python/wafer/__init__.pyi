# wafer — SPDX-License-Identifier: MIT
# Type stubs of the wafer package: what it re-exports from wafer._wafer.
import os
from typing import Any, Optional, Union
from ._wafer import Device as Device
from ._wafer import Error as Error
from ._wafer import InvalidArgumentError as InvalidArgumentError
from ._wafer import OutOfMemoryError as OutOfMemoryError
from ._wafer import NotFoundError as NotFoundError
from ._wafer import NotSupportedError as NotSupportedError
from ._wafer import ConfigError as ConfigError
from ._wafer import PluginError as PluginError
from ._wafer import NoDeviceError as NoDeviceError
from ._wafer import DeviceError as DeviceError
from ._wafer import OutOfRangeError as OutOfRangeError
from ._wafer import InvalidHandleError as InvalidHandleError
from ._wafer import DonatedError as DonatedError
from ._wafer import IOError as IOError
from ._wafer import AbiMismatchError as AbiMismatchError
from ._wafer import InternalError as InternalError
from ._wafer import BuildError as BuildError
from ._wafer import Runtime as Runtime
from ._wafer import Client as Client
from ._wafer import Tensor as Tensor
from ._wafer import Kernel as Kernel
from ._wafer import Program as Program
from ._wafer import donate as donate
from ._wafer import library_version as library_version
from ._wafer import negative as negative
from ._wafer import abs as abs
from ._wafer import exp as exp
from ._wafer import log as log
from ._wafer import sqrt as sqrt
from ._wafer import relu as relu
from ._wafer import gelu as gelu
from ._wafer import sigmoid as sigmoid
from ._wafer import tanh as tanh
from ._wafer import copy as copy
from ._wafer import add as add
from ._wafer import subtract as subtract
from ._wafer import multiply as multiply
from ._wafer import divide as divide
from ._wafer import maximum as maximum
from ._wafer import minimum as minimum
from ._wafer import sum as sum
from ._wafer import max as max
from ._wafer import mean as mean
from ._wafer import softmax as softmax
from ._wafer import matmul as matmul

def broadcast_to(x: Tensor, shape: Any) -> Tensor: ...
def from_dlpack(x: Any, client: Optional[Client] = ...) -> Tensor: ...

class trace:
    def __init__(self, path: Union[str, "os.PathLike[str]"],
                 runtime: Optional[Runtime] = ...) -> None: ...
    def __enter__(self) -> "trace": ...
    def __exit__(self, *exc: Any) -> None: ...

__version__: str
float32: str
float16: str
bfloat16: str
float64: str
int32: str
int64: str
uint8: str
