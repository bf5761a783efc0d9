# Drawbridge: `make demo` and `make test` set up everything on a fresh Debian machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
APT_PACKAGES := pocl-opencl-icd ocl-icd-opencl-dev opencl-headers libclblast-dev libvkfft-dev clinfo ccache \
                libgtest-dev g++ python3-venv
# Lets ccache reuse objects built with the precompiled header.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all setup system-deps install demo test test-cpp test-py bench clean ops-doc

all: install

system-deps:
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  echo "Installing Debian packages: $(APT_PACKAGES)"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi

$(VENV)/.ready: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -r requirements-dev.txt
	touch $@

setup: system-deps $(VENV)/.ready

# Incremental: CMake keeps its build tree in build/, ccache keeps objects across clean builds.
# Python started in the repository root imports this folder's drawbridge (and `import torch`
# autoloads it): a link to the installed _C makes that folder a working package.
install: setup
	$(PIP) install -q --no-build-isolation --no-deps .
	@ln -sf "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"/drawbridge/_C*.so drawbridge/

demo: install
	$(PY) examples/hello_ocl.py
	$(PY) examples/train_mlp.py

test-cpp: setup
	$(VENV)/bin/cmake -S . -B build/cpp -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DDRAWBRIDGE_PYTHON=OFF -DDRAWBRIDGE_TESTS=ON >/dev/null
	$(VENV)/bin/cmake --build build/cpp
	$(VENV)/bin/ctest --test-dir build/cpp --output-on-failure

# The suites whose kernels choose a variant by device class run again with the GPU paths, so
# that both classes are covered on PoCL (DRAWBRIDGE_DEVICE_CLASS, docs/env.md).
GPU_CLASS_TESTS := tests/test_gemm.py tests/test_variant_sweeps.py tests/test_tensor_engine.py tests/test_errors.py \
                   tests/test_layers.py tests/test_training.py tests/test_attention.py tests/test_compile.py \
                   tests/test_custom_kernels.py tests/test_foreach.py \
                   tests/test_optimizers.py tests/test_linalg.py

# The two runs go side by side: a cold run is bound by PoCL's compiler, which builds a program on
# one core. The GPU-class run's output is shown after the other's.
test-py: install
	@mkdir -p build
	@DRAWBRIDGE_DEVICE_CLASS=gpu $(VENV)/bin/pytest -q $(GPU_CLASS_TESTS) > build/gpu-class-tests.log 2>&1 & gpu=$$!; \
	$(VENV)/bin/pytest -q tests; cpu=$$?; \
	wait $$gpu; gpu=$$?; \
	echo "== the same suites with DRAWBRIDGE_DEVICE_CLASS=gpu: $(GPU_CLASS_TESTS)"; cat build/gpu-class-tests.log; \
	exit $$(( cpu != 0 || gpu != 0 ))

test: test-cpp test-py

bench: install
	$(PY) bench/copy_bandwidth.py
	$(PY) bench/op_overhead.py
	$(PY) bench/pointwise_reduce.py
	$(PY) bench/gemm.py
	$(PY) bench/conv_layer.py
	$(PY) bench/train_step.py
	$(PY) bench/attention.py
	$(PY) bench/optimizer_step.py
	$(PY) bench/compile.py
	$(PY) bench/spectral_linalg.py
	$(PY) bench/custom_kernel.py
	$(PY) bench/allreduce.py

clean:
	rm -rf build *.egg-info

# Regenerates docs/ops.md from a fresh OpInfo run, with the compiled column (about a quarter of
# an hour more than the OpInfo test with warm caches).
ops-doc: install
	mkdir -p build/opinfo
	cd build/opinfo && ../../$(PY) ../../tests/opinfo/harness.py --compiled --out report.json --markdown ../../docs/ops.md
