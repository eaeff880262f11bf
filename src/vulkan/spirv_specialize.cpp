#include "vulkan/spirv_specialize.hpp"

#include <cstdint>
#include <unordered_map>

namespace vela::vk {

namespace {

// SPIR-V opcodes and the decoration used here (SPIR-V 1.6, section 3).
constexpr uint32_t kOpDecorate = 71, kDecorationSpecId = 1;
constexpr uint32_t kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43;
constexpr uint32_t kOpSpecConstantTrue = 48, kOpSpecConstantFalse = 49, kOpSpecConstant = 50;
constexpr uint32_t kOpSpecConstantOp = 52, kOpTypeBool = 20, kOpTypeInt = 21;
constexpr size_t kHeaderWords = 5;

// The value of OpSpecConstantOp's operation `op` on 32-bit integer or boolean
// (0/1) operands x (count of them: n), as the SPIR-V spec defines it; false
// for an operation not handled here or one without a defined result
// (division by zero, a shift by 32 or more), which then stays for the driver.
bool fold(uint32_t op, const uint32_t* x, uint32_t n, uint32_t& r) {
    auto s = [&](uint32_t k) { return int32_t(x[k]); };
    if (n == 1) {
        switch (op) {
        case 126: r = uint32_t(-int64_t(s(0))); return true;  // OpSNegate
        case 200: r = ~x[0]; return true;                      // OpNot
        case 168: r = !x[0]; return true;                      // OpLogicalNot
        default: return false;
        }
    }
    if (n == 3) {
        if (op != 169) return false;  // OpSelect
        r = x[0] ? x[1] : x[2];
        return true;
    }
    if (n != 2) return false;
    const uint32_t a = x[0], b = x[1];
    switch (op) {
    case 128: r = a + b; return true;  // OpIAdd
    case 130: r = a - b; return true;  // OpISub
    case 132: r = a * b; return true;  // OpIMul
    case 134: if (b == 0) return false; r = a / b; return true;  // OpUDiv
    case 137: if (b == 0) return false; r = a % b; return true;  // OpUMod
    case 135:                                                     // OpSDiv
    case 138:                                                     // OpSRem
    case 139: {                                                   // OpSMod
        if (b == 0 || (s(0) == INT32_MIN && s(1) == -1)) return false;
        int32_t q = s(0) / s(1), m = s(0) % s(1);
        if (op == 139 && m != 0 && ((m < 0) != (s(1) < 0))) m += s(1);  // the sign of the divisor
        r = uint32_t(op == 135 ? q : m);
        return true;
    }
    case 194: if (b >= 32) return false; r = a >> b; return true;            // OpShiftRightLogical
    case 195: if (b >= 32) return false; r = uint32_t(s(0) >> b); return true;  // OpShiftRightArithmetic
    case 196: if (b >= 32) return false; r = a << b; return true;            // OpShiftLeftLogical
    case 197: r = a | b; return true;   // OpBitwiseOr
    case 198: r = a ^ b; return true;   // OpBitwiseXor
    case 199: r = a & b; return true;   // OpBitwiseAnd
    case 164: r = a == b; return true;  // OpLogicalEqual
    case 165: r = a != b; return true;  // OpLogicalNotEqual
    case 166: r = a || b; return true;  // OpLogicalOr
    case 167: r = a && b; return true;  // OpLogicalAnd
    case 170: r = a == b; return true;  // OpIEqual
    case 171: r = a != b; return true;  // OpINotEqual
    case 172: r = a > b; return true;   // OpUGreaterThan
    case 173: r = s(0) > s(1); return true;
    case 174: r = a >= b; return true;  // OpUGreaterThanEqual
    case 175: r = s(0) >= s(1); return true;
    case 176: r = a < b; return true;   // OpULessThan
    case 177: r = s(0) < s(1); return true;
    case 178: r = a <= b; return true;  // OpULessThanEqual
    case 179: r = s(0) <= s(1); return true;
    default: return false;
    }
}

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
    // Then every OpSpecConstantOp whose operands are now all plain 32-bit
    // integer or boolean constants (in order: an operand is defined before
    // its use), e.g. MR * NR or `PAIR != 0 && TA == 0` of mm_regblock.comp.
    // SwiftShader's spirv-opt passes fold neither: an array sized by one is
    // not split into registers, a branch on one is not removed (docs/gemm.md).
    std::unordered_map<uint32_t, bool> types;           // 32-bit integer or bool type id → is bool
    std::unordered_map<uint32_t, uint32_t> constants;   // their constants (frozen ones included) → value
    std::unordered_map<uint32_t, uint32_t> folded;      // OpSpecConstantOp result id → value
    walk(code, words, [&](size_t i, uint32_t op, uint32_t n) {
        if (op == kOpTypeInt && n == 4 && code[i + 2] == 32) types.emplace(code[i + 1], false);
        if (op == kOpTypeBool && n == 2) types.emplace(code[i + 1], true);
        if (op == kOpConstant && n == 4 && types.count(code[i + 1])) constants.emplace(code[i + 2], code[i + 3]);
        if ((op == kOpConstantTrue || op == kOpConstantFalse) && n == 3 && types.count(code[i + 1]))
            constants.emplace(code[i + 2], op == kOpConstantTrue);
        if ((op == kOpSpecConstant || op == kOpSpecConstantTrue || op == kOpSpecConstantFalse) && n >= 3)
            if (auto it = frozen.find(code[i + 2]); it != frozen.end() && types.count(code[i + 1]))
                constants.emplace(it->first, op == kOpSpecConstant ? it->second : it->second != 0);
        if (op == kOpSpecConstantOp && n >= 5 && n <= 7 && types.count(code[i + 1])) {
            uint32_t x[3], r = 0;
            for (uint32_t k = 0; k < n - 4; ++k) {
                auto it = constants.find(code[i + 4 + k]);
                if (it == constants.end()) return;
                x[k] = it->second;
            }
            if (!fold(code[i + 3], x, n - 4, r)) return;
            if (types[code[i + 1]]) r = r != 0;
            constants.emplace(code[i + 2], r);
            folded.emplace(code[i + 2], r);
        }
    });
    std::vector<uint32_t> out(code, code + kHeaderWords);
    out.reserve(words);
    walk(code, words, [&](size_t i, uint32_t op, uint32_t n) {
        if (op == kOpDecorate && n == 4 && code[i + 2] == kDecorationSpecId && frozen.count(code[i + 1])) return;
        if (op == kOpSpecConstantOp) {
            if (auto it = folded.find(code[i + 2]); it != folded.end()) {
                if (types[code[i + 1]]) {
                    uint32_t c = it->second ? kOpConstantTrue : kOpConstantFalse;
                    out.insert(out.end(), {(3u << 16) | c, code[i + 1], code[i + 2]});
                } else {
                    out.insert(out.end(), {(4u << 16) | kOpConstant, code[i + 1], code[i + 2], it->second});
                }
                return;
            }
        }
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
