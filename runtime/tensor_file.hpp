#pragma once
// Tensor files: how a user hands the runtime an input (or a weight) and gets
// an output back. Two formats, chosen by the file's extension:
//
//  .npy  NumPy's array format (numpy.lib.format). Read: versions 1.0, 2.0 and
//        3.0. Written: 1.0, or 2.0 when the header does not fit 1.0's 16-bit
//        length, byte for byte as numpy.save writes it (numpy 1.24: keys
//        sorted, the spare space numpy leaves after the dict, spaces and a
//        newline padding the header to a multiple of 64 bytes).
//        The header dictionary is parsed strictly: exactly the keys 'descr',
//        'fortran_order' and 'shape'; fortran_order False; little-endian
//        dtypes only:
//          '<f4' f32   '<f2' f16   '<u4' u32   '<i4' i32   '|u1' ('u1', '<u1') u8
//        numpy has no f8f143 (IPU 8-bit float, 1-4-3): an f8f143 tensor is
//        stored as its raw bytes in a uint8 ('|u1') .npy, and an f8f143
//        binding accepts a uint8 .npy of the same shape.
//  .bin  The element bytes alone (row-major, little-endian). The dtype and
//        shape come from the binding; the file's size must match exactly.
//
// Every size read from a file is checked (support/checked.hpp) before it is
// used, and nothing is allocated before the file is known to hold it. Malformed
// files throw InputError (ArithmeticError for sizes that overflow), the OS's
// refusals IoError; both carry the file's path as their outer context.

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/tensor.hpp"
#include "schema/model.hpp"

namespace tessera::runtime {

enum class TensorFileFormat : std::uint8_t { kNpy, kBin };

// The format named by the path's extension (".npy" or ".bin", exactly), or
// UsageError naming the extension and the accepted ones.
TensorFileFormat tensor_file_format(const std::filesystem::path& path);

// Reads the tensor for `expected` from a .npy or .bin file. A .npy file's
// dtype and shape must match the binding (check_matches; a uint8 .npy for an
// f8f143 binding gives an f8f143 tensor); this is checked before the data is
// read. `what` names the kind of binding in messages ("input", "weight").
HostTensor read_tensor_file(const std::filesystem::path& path, const schema::Binding& expected,
                            std::string_view what = "binding");

// Writes the tensor as .npy or .bin (by extension; an f8f143 tensor becomes a
// uint8 .npy). Atomic (support/atomic_file.hpp): the bytes go to a temporary
// file created exclusively next to PATH, synced and renamed over it, so a
// failure leaves any previous PATH untouched and no temporary behind.
void write_tensor_file(const std::filesystem::path& path, const HostTensor& tensor);

// A .npy file as it is, without a binding to check against (a '|u1' file
// gives a u8 tensor).
HostTensor read_npy_file(const std::filesystem::path& path);

// The same in memory: .npy bytes to a tensor and back. decode_npy throws
// InputError (without a path) for malformed bytes.
HostTensor decode_npy(std::span<const std::uint8_t> bytes);
std::vector<std::uint8_t> encode_npy(const HostTensor& tensor);

}  // namespace tessera::runtime
