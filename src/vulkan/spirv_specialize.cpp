#include "vulkan/spirv_specialize.hpp"

#include <unordered_map>

namespace vela::vk {

namespace {

// SPIR-V opcodes and the decoration used here (SPIR-V 1.6, section 3).
constexpr uint32_t kOpDecorate = 71, kDecorationSpecId = 1;
constexpr uint32_t kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43;
constexpr uint32_t kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50;
constexpr size_t kHeaderWords = 5;

// Calls f(offset, opcode, word count) for each instruction; false when the
// stream does not parse (a zero or overlong word count).
template <class F>
bool walk(const uint32_t* code, size_t words, F&& f) {
    for (size_t i = kHeaderWords; i < words;) {
        uint32_t op = code[i] & 0xffffu, n = code[i] >> 16;
        if (n == 0 || n > words - i) return false;
        f(i, op, n);
        i += n;
    }
    return true;
}

}  // namespace

std::vector<uint32_t> specialize_spirv(const uint32_t* code, size_t words, const uint32_t* spec, uint32_t count) {
    std::vector<uint32_t> unchanged(code, code + words);
    if (words <= kHeaderWords || count == 0) return unchanged;
    // The spec constants with a value: result id → constant_id.
    std::unordered_map<uint32_t, uint32_t> ids;
    bool ok = walk(code, words, [&](size_t i, uint32_t op, uint32_t n) {
        if (op == kOpDecorate && n == 4 && code[i + 2] == kDecorationSpecId && code[i + 3] < count)
            ids.emplace(code[i + 1], code[i + 3]);
    });
    if (!ok || ids.empty()) return unchanged;
    // Which of them can be frozen: 32-bit OpSpecConstant and the boolean forms.
    std::unordered_map<uint32_t, uint32_t> frozen;
    walk(code, words, [&](size_t i, uint32_t op, uint32_t n) {
        bool scalar = op == kOpSpecConstant && n == 4;
        bool boolean = (op == kOpSpecConstantTrue || op == kOpSpecConstantFalse) && n == 3;
        if (scalar || boolean)
            if (auto it = ids.find(code[i + 2]); it != ids.end()) frozen.emplace(it->first, spec[it->second]);
    });
    if (frozen.empty()) return unchanged;
    std::vector<uint32_t> out(code, code + kHeaderWords);
    out.reserve(words);
    walk(code, words, [&](size_t i, uint32_t op, uint32_t n) {
        if (op == kOpDecorate && n == 4 && code[i + 2] == kDecorationSpecId && frozen.count(code[i + 1])) return;
        if (op == kOpSpecConstant || op == kOpSpecConstantTrue || op == kOpSpecConstantFalse) {
            if (auto it = frozen.find(code[i + 2]); it != frozen.end()) {
                if (op == kOpSpecConstant) {
                    out.insert(out.end(), {(4u << 16) | kOpConstant, code[i + 1], code[i + 2], it->second});
                } else {
                    uint32_t c = it->second ? kOpConstantTrue : kOpConstantFalse;
                    out.insert(out.end(), {(3u << 16) | c, code[i + 1], code[i + 2]});
                }
                return;
            }
        }
        out.insert(out.end(), code + i, code + i + n);
    });
    return out;
}

}  // namespace vela::vk
