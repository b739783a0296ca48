# Entry points for people and CI. Each target does its own set-up, so these
# work on a fresh Debian 12 machine: `make demo` and `make test` (see README).

BUILD_DIR   ?= build
RELEASE_DIR ?= build-release
ASAN_DIR    ?= build-asan
TSAN_DIR    ?= build-tsan
FUZZ_DIR    ?= build-fuzz
JOBS        ?= 2
CMAKE_FLAGS ?=

CONFIGURE = cmake -G Ninja -Wno-dev $(CMAKE_FLAGS)

# make fuzz: the package reader's libFuzzer target under ASan/UBSan (clang),
# seeded from tessera_fuzz_seed_corpus. The corpus it grows and any crash-*
# files stay in $(FUZZ_DIR)/fuzz/ (docs/CONTRIBUTING.md, "Fuzzing the package reader").
FUZZ_SECONDS ?= 600
FUZZ_MAX_LEN ?= 65536
FUZZ_FLAGS   ?=
FUZZ_WORK     = $(FUZZ_DIR)/fuzz

.PHONY: all setup build test demo walkthrough release test-asan test-tsan fuzz fuzz-elf format clean

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

# make demo: the main job, SigLIP so400m at f143 on the simulated C600 against
# the CPU reference; it builds only the `tessera` command.
demo: setup
	@$(CONFIGURE) -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@echo "building the tessera command (Release, $(RELEASE_DIR)/build.log)"
	@cmake --build $(RELEASE_DIR) -j $(JOBS) --target tessera >$(RELEASE_DIR)/build.log 2>&1 || \
	  { tail -n 40 $(RELEASE_DIR)/build.log; exit 1; }
	@scripts/demo $(RELEASE_DIR)

# make walkthrough: the data-movement tour (pack, simulate, asm/disasm, the
# host-call protocol, a compiled whole-chip permutation and sum, a tiny SigLIP).
walkthrough: release
	@scripts/walkthrough $(RELEASE_DIR)

test-asan: setup
	@$(CONFIGURE) -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug \
	  -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS)
	@ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# make test-tsan: the tests that run tiles on several host threads (the
# simulator's pool), under ThreadSanitizer in $(TSAN_DIR)/.
TSAN_TESTS ?= ThreadCount|ThreadPool|Compile\.|Exchange|HostLink|Chip
test-tsan: setup
	@$(CONFIGURE) -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTESSERA_SANITIZE=thread >/dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS) --target support_tests sim_tests compiler_tests
	@TSAN_OPTIONS=halt_on_error=1 ctest --test-dir $(TSAN_DIR) --output-on-failure -j $(JOBS) \
	  -R '$(TSAN_TESTS)'

fuzz:
	@scripts/setup fuzz
	@CC=clang CXX=clang++ $(CONFIGURE) -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTESSERA_FUZZ=ON -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target tessera_fuzz_package_reader tessera_fuzz_seed_corpus
	@rm -rf $(FUZZ_WORK)/seeds
	@$(FUZZ_DIR)/tests/fuzz/tessera_fuzz_seed_corpus $(FUZZ_WORK)/seeds
	@mkdir -p $(FUZZ_WORK)/corpus $(FUZZ_WORK)/artifacts
	UBSAN_OPTIONS=print_stacktrace=1 $(FUZZ_DIR)/tests/fuzz/tessera_fuzz_package_reader \
	  $(FUZZ_WORK)/corpus $(FUZZ_WORK)/seeds -max_len=$(FUZZ_MAX_LEN) \
	  -max_total_time=$(FUZZ_SECONDS) -timeout=10 -artifact_prefix=$(FUZZ_WORK)/artifacts/ \
	  -print_final_stats=1 $(FUZZ_FLAGS)

# make fuzz-elf: the Colossus object reader and linker (compiler/elf) the same way,
# seeded from tessera_fuzz_elf_seeds; its corpus and crashes stay in $(FUZZ_DIR)/fuzz-elf/.
FUZZ_ELF_WORK = $(FUZZ_DIR)/fuzz-elf
fuzz-elf:
	@scripts/setup fuzz
	@CC=clang CXX=clang++ $(CONFIGURE) -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTESSERA_FUZZ=ON -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target tessera_fuzz_elf_linker tessera_fuzz_elf_seeds
	@rm -rf $(FUZZ_ELF_WORK)/seeds
	@$(FUZZ_DIR)/tests/fuzz/tessera_fuzz_elf_seeds $(FUZZ_ELF_WORK)/seeds
	@mkdir -p $(FUZZ_ELF_WORK)/corpus $(FUZZ_ELF_WORK)/artifacts
	UBSAN_OPTIONS=print_stacktrace=1 $(FUZZ_DIR)/tests/fuzz/tessera_fuzz_elf_linker \
	  $(FUZZ_ELF_WORK)/corpus $(FUZZ_ELF_WORK)/seeds -max_len=$(FUZZ_MAX_LEN) \
	  -max_total_time=$(FUZZ_SECONDS) -timeout=10 -artifact_prefix=$(FUZZ_ELF_WORK)/artifacts/ \
	  -print_final_stats=1 $(FUZZ_FLAGS)

format:
	@git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(RELEASE_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR)
