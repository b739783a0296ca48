# Entry points for people and CI. Each target does its own set-up, so these
# work on a fresh Debian 12 machine: `make demo` and `make test` (see README).

BUILD_DIR   ?= build
RELEASE_DIR ?= build-release
ASAN_DIR    ?= build-asan
JOBS        ?= 2
CMAKE_FLAGS ?=

CONFIGURE = cmake -G Ninja -Wno-dev $(CMAKE_FLAGS)

.PHONY: all setup build test demo release test-asan format clean

all: build

setup:
	@scripts/setup

build: setup
	@$(CONFIGURE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

release: setup
	@$(CONFIGURE) -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(RELEASE_DIR) -j $(JOBS)

demo: release
	@scripts/demo $(RELEASE_DIR)

test-asan: setup
	@$(CONFIGURE) -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug \
	  -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	@ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(RELEASE_DIR) $(ASAN_DIR)
