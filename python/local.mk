# python/: the wafer package (pip install ./python; t/internal/python.sh builds and
# tests it against the build tree). Shipped in the tarball, built by pip,
# not by make.
EXTRA_DIST += python/README.md python/pyproject.toml python/setup.py \
	python/src/wafer_py.h python/src/module.c python/src/errors.c \
	python/src/runtime.c python/src/tensor.c python/src/ops.c \
	python/src/program.c python/src/graph.c python/src/bench.c \
	python/src/dlpack.c \
	python/wafer/__init__.py python/wafer/__init__.pyi \
	python/wafer/_wafer.pyi python/wafer/_host.py python/wafer/bench.py \
	python/wafer/tinygrad.py python/wafer/tinygrad_mlp.py \
	python/wafer/py.typed \
	python/tests/conftest.py python/tests/test_ops.py \
	python/tests/test_views.py python/tests/test_donation.py \
	python/tests/test_leaks.py python/tests/test_errors.py \
	python/tests/test_program.py python/tests/test_runtime.py \
	python/tests/test_dlpack.py python/tests/test_numpy_semantics.py \
	python/tests/test_trace.py python/tests/test_tinygrad.py \
	python/tests/test_graph.py

# The venv, the copy pip builds from and pytest's scratch (t/internal/python.sh).
clean-local: clean-local-python
clean-local-python:
	rm -rf t/python
.PHONY: clean-local-python
