#include "vulkan/spirv_specialize.hpp"

#include <spirv-tools/libspirv.h>

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

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

namespace {

// More opcodes (SPIR-V 1.6, section 3.52).
constexpr uint32_t kOpName = 5, kOpExtInstImport = 11, kOpFunction = 54, kOpFunctionEnd = 56;
constexpr uint32_t kOpDecorationGroup = 73, kOpGroupDecorate = 74, kOpGroupMemberDecorate = 75;
constexpr uint32_t kOpDecorateId = 332, kOpDecorateString = 5632, kOpPhi = 245, kOpLoopMerge = 246;
constexpr uint32_t kOpSelectionMerge = 247, kOpLabel = 248, kOpBranch = 249, kOpBranchConditional = 250;
constexpr uint32_t kOpSwitch = 251, kOpMemberName = 6, kOpMemberDecorate = 72, kOpMemberDecorateString = 5633;

struct Inst {
    size_t at;        // first word in the module
    uint32_t n, op;   // word count, opcode
    uint32_t result;  // result id, 0 when none
};

// The module's instructions by SPIRV-Tools' parser (which knows where each
// opcode keeps its result id); empty when it does not parse.
std::vector<Inst> parse(const std::vector<uint32_t>& m) {
    static const spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    struct State {
        const uint32_t* base;
        std::vector<Inst> out;
    } st{m.data(), {}};
    st.out.reserve(m.size() / 4);
    auto on_inst = [](void* u, const spv_parsed_instruction_t* in) -> spv_result_t {
        auto& s = *static_cast<State*>(u);
        s.out.push_back({size_t(in->words - s.base), in->num_words, in->opcode, in->result_id});
        return SPV_SUCCESS;
    };
    if (spvBinaryParse(ctx, &st, m.data(), m.size(), nullptr, on_inst, nullptr) != SPV_SUCCESS) return {};
    // The parser hands over the words it was given (native endianness): check, since offsets are taken from them.
    for (const Inst& i : st.out)
        if (i.at >= m.size() || m.size() - i.at < i.n) return {};
    return st.out;
}

// Names and decorations: they refer to an id without using its value.
bool names_an_id(uint32_t op) {
    return op == kOpName || op == kOpMemberName || op == kOpDecorate || op == kOpMemberDecorate || op == kOpDecorateId ||
           op == kOpDecorateString || op == kOpMemberDecorateString;
}

struct Block {
    size_t first = 0, last = 0;  // instruction indices of the OpLabel and of the terminator
    size_t merge = SIZE_MAX;     // of the OpSelectionMerge or OpLoopMerge before the terminator
    std::vector<uint32_t> term;  // the new terminator's words; empty: unchanged
    bool reached = false;
};

}  // namespace

std::vector<uint32_t> prune_constant_branches(const std::vector<uint32_t>& m) {
    std::vector<Inst> ins = parse(m);
    if (ins.empty()) return m;
    std::unordered_set<uint32_t> int32_types;
    std::unordered_map<uint32_t, bool> bools;        // boolean constant id → value
    std::unordered_map<uint32_t, uint32_t> ints;     // 32-bit integer constant id → value
    for (const Inst& i : ins) {
        const uint32_t* w = m.data() + i.at;
        if (i.op == kOpDecorationGroup || i.op == kOpGroupDecorate || i.op == kOpGroupMemberDecorate) return m;
        if (i.op == kOpExtInstImport && i.n >= 3 && std::strncmp(reinterpret_cast<const char*>(w + 2), "NonSemantic.", 12) == 0)
            return m;
        if (i.op == kOpTypeInt && i.n == 4 && w[2] == 32) int32_types.insert(w[1]);
        if ((i.op == kOpConstantTrue || i.op == kOpConstantFalse) && i.n == 3) bools[w[2]] = i.op == kOpConstantTrue;
        if (i.op == kOpConstant && i.n == 4 && int32_types.count(w[1])) ints[w[2]] = w[3];
    }
    std::vector<char> keep(ins.size(), 1);               // instructions kept whole
    std::unordered_map<size_t, std::vector<uint32_t>> replaced;  // instruction index → its new words
    std::unordered_set<uint32_t> gone;                   // ids defined in removed blocks
    bool changed = false;
    for (size_t f = 0; f < ins.size(); ++f) {
        if (ins[f].op != kOpFunction) continue;
        // This function's blocks, in order, and their labels.
        std::vector<Block> blocks;
        std::unordered_map<uint32_t, size_t> by_label;
        size_t end = f + 1;  // the OpFunctionEnd
        for (; end < ins.size() && ins[end].op != kOpFunctionEnd; ++end) {
            if (ins[end].op == kOpLabel) {
                if (!blocks.empty()) blocks.back().last = end - 1;
                by_label[ins[end].result] = blocks.size();
                Block nb;
                nb.first = nb.last = end;
                blocks.push_back(nb);
            }
        }
        if (blocks.empty() || end == ins.size()) continue;
        blocks.back().last = end - 1;
        auto word = [&](size_t k, uint32_t j) { return m[ins[k].at + j]; };
        // The taken target of each branch on a constant.
        bool any = false;
        for (Block& b : blocks) {
            const size_t t = b.last;
            if (t > b.first && (ins[t - 1].op == kOpSelectionMerge || ins[t - 1].op == kOpLoopMerge)) b.merge = t - 1;
            const bool loop = b.merge != SIZE_MAX && ins[b.merge].op == kOpLoopMerge;
            uint32_t target = 0;
            if (ins[t].op == kOpBranchConditional && ins[t].n >= 4 && !loop) {
                auto c = bools.find(word(t, 1));
                if (c == bools.end() || word(t, 2) == word(t, 3)) continue;
                target = c->second ? word(t, 2) : word(t, 3);
            } else if (ins[t].op == kOpSwitch && ins[t].n > 3 && !loop) {
                auto c = ints.find(word(t, 1));
                if (c == ints.end() || (ins[t].n - 3) % 2 != 0) continue;
                target = word(t, 2);
                for (uint32_t j = 3; j + 1 < ins[t].n; j += 2)
                    if (word(t, j) == c->second) {
                        target = word(t, j + 1);
                        break;
                    }
            } else {
                continue;
            }
            if (!by_label.count(target)) continue;
            // A switch keeps its merge (its cases may break to it): a switch with only a default.
            if (ins[t].op == kOpSwitch && b.merge != SIZE_MAX)
                b.term = {(3u << 16) | kOpSwitch, word(t, 1), target};
            else
                b.term = {(2u << 16) | kOpBranch, target};
            any = true;
        }
        if (!any) continue;
        // Each block's targets with the new terminators; which blocks are reached from the first.
        auto targets = [&](const Block& b) {
            std::vector<uint32_t> out;
            const uint32_t* w = b.term.empty() ? m.data() + ins[b.last].at : b.term.data();
            const uint32_t op = w[0] & 0xffffu, n = w[0] >> 16;
            if (op == kOpBranch) out.push_back(w[1]);
            if (op == kOpBranchConditional) {
                out.push_back(w[2]);
                out.push_back(w[3]);
            }
            if (op == kOpSwitch) {
                out.push_back(w[2]);
                for (uint32_t j = 4; j < n; j += 2) out.push_back(w[j]);
            }
            return out;
        };
        std::vector<size_t> frontier{0};  // reached blocks whose targets are not yet followed
        blocks[0].reached = true;
        while (!frontier.empty()) {
            size_t b = frontier.back();
            frontier.pop_back();
            for (uint32_t l : targets(blocks[b])) {
                auto it = by_label.find(l);
                if (it != by_label.end() && !blocks[it->second].reached) {
                    blocks[it->second].reached = true;
                    frontier.push_back(it->second);
                }
            }
        }
        // A kept header's merge block and continue target must stay: else leave this function alone.
        bool safe = true;
        for (const Block& b : blocks) {
            if (!b.reached || b.merge == SIZE_MAX || b.term.size() == 2) continue;
            for (uint32_t j = 1; j <= (ins[b.merge].op == kOpLoopMerge ? 2u : 1u); ++j) {
                auto it = by_label.find(word(b.merge, j));
                safe = safe && it != by_label.end() && blocks[it->second].reached;
            }
        }
        if (!safe) continue;
        // The edges left, for the OpPhi operands: (predecessor label, block label).
        std::unordered_set<uint64_t> edges;
        for (const Block& b : blocks)
            if (b.reached)
                for (uint32_t l : targets(b)) edges.insert(uint64_t(ins[b.first].result) << 32 | l);
        for (const Block& b : blocks) {
            if (!b.reached) {
                for (size_t k = b.first; k <= b.last; ++k) {
                    keep[k] = 0;
                    if (ins[k].result) gone.insert(ins[k].result);
                }
                continue;
            }
            if (!b.term.empty()) {
                keep[b.last] = 0;
                replaced[b.last] = b.term;
                if (b.term.size() == 2 && b.merge != SIZE_MAX) keep[b.merge] = 0;  // an if's OpSelectionMerge
            }
            const uint32_t label = ins[b.first].result;
            for (size_t k = b.first + 1; k < b.last && ins[k].op == kOpPhi; ++k) {
                std::vector<uint32_t> phi{0, word(k, 1), word(k, 2)};
                for (uint32_t j = 3; j + 1 < ins[k].n; j += 2)
                    if (edges.count(uint64_t(word(k, j + 1)) << 32 | label)) phi.insert(phi.end(), {word(k, j), word(k, j + 1)});
                if (phi.size() == ins[k].n) continue;
                phi[0] = uint32_t(phi.size()) << 16 | kOpPhi;
                keep[k] = 0;
                replaced[k] = phi;
            }
        }
        changed = true;
    }
    if (!changed) return m;
    std::vector<uint32_t> out(m.begin(), m.begin() + kHeaderWords);
    out.reserve(m.size());
    for (size_t k = 0; k < ins.size(); ++k) {
        const Inst& i = ins[k];
        if (names_an_id(i.op) && i.n >= 2 && gone.count(m[i.at + 1])) continue;
        if (keep[k]) {
            out.insert(out.end(), m.begin() + i.at, m.begin() + i.at + i.n);
        } else if (auto it = replaced.find(k); it != replaced.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
        }
    }
    return out;
}

}  // namespace vela::vk
