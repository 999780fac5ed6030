// C ABI around the verilated NIC (`top`, C++ class RNIC_MODEL), used by sim/src/ffi.rs.
//
// One call per clock cycle (rnic_nic_cycle) moves every port value at once, so the simulator pays
// one foreign call per cycle instead of one per signal. Layouts of NicInputs/NicOutputs must match
// the #[repr(C)] structs in sim/src/ffi.rs; rnic_nic_abi() reports their sizes so Rust can check.
//
// Field encoding: every signal of up to 32 bits is a uint32_t (masked to the port width here),
// 64-bit signals are uint64_t, 512-bit signals are 16 little-endian uint32_t words (word 0 holds
// bits 31..0), which is Verilator's VlWide layout.
//
// Evaluation (docs/simulator.md, "One evaluation per cycle"): Verilator's eval() re-runs the
// input-combinational region (`ico`) on every call, so the textbook "clock low, eval; clock high,
// eval" evaluates most of this design's combinational logic three times per cycle. When build.rs
// finds Verilator 5.006's scheduler in the generated model (RNIC_FAST_CYCLE=1), the fast mode
// skips the two passes whose results are already known, with identical results:
//  - the clock-low eval when this cycle's inputs equal the last evaluated ones (the logic settled
//    on exactly these inputs after the previous rising edge): only the clock's edge detector is
//    told that the clock was low;
//  - at the rising edge, the `ico` pass (the inputs did not change since the logic settled on
//    them): only Verilator's active/NBA loop runs, as in its own _eval.
// The checked mode steps a second model the textbook way beside it and reports the first cycle
// whose outputs differ; the reference mode is the textbook way alone.
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "verilated.h"
#include RNIC_PREFIX_HEADER
#if RNIC_FAST_CYCLE || RNIC_STATE_PROFILE
#include RNIC_ROOT_HEADER
#endif
#if VM_TRACE
#include "verilated_fst_c.h"
#endif

extern "C" {

struct NicInputs {
    uint64_t s_axis_rx_tkeep;
    uint32_t m_axi_rdata[16];
    uint32_t s_axis_rx_tdata[16];
    uint32_t reset;
    // AXI4-Lite slave (driven by the host's MMIO master)
    uint32_t s_axil_awaddr;
    uint32_t s_axil_awvalid;
    uint32_t s_axil_wdata;
    uint32_t s_axil_wstrb;
    uint32_t s_axil_wvalid;
    uint32_t s_axil_bready;
    uint32_t s_axil_araddr;
    uint32_t s_axil_arvalid;
    uint32_t s_axil_rready;
    // AXI4 master: the host memory's slave side
    uint32_t m_axi_awready;
    uint32_t m_axi_wready;
    uint32_t m_axi_bid;
    uint32_t m_axi_bresp;
    uint32_t m_axi_bvalid;
    uint32_t m_axi_arready;
    uint32_t m_axi_rid;
    uint32_t m_axi_rresp;
    uint32_t m_axi_rlast;
    uint32_t m_axi_rvalid;
    // AXI4-Stream
    uint32_t m_axis_tx_tready;
    uint32_t s_axis_rx_tlast;
    uint32_t s_axis_rx_tvalid;
    uint32_t s_axis_rx_tuser;
    // Interrupt handshake from the PCIe core
    uint32_t irq_ready;
};

struct NicOutputs {
    uint64_t m_axi_awaddr;
    uint64_t m_axi_wstrb;
    uint64_t m_axi_araddr;
    uint64_t m_axis_tx_tkeep;
    uint32_t m_axi_wdata[16];
    uint32_t m_axis_tx_tdata[16];
    // AXI4-Lite slave
    uint32_t s_axil_awready;
    uint32_t s_axil_wready;
    uint32_t s_axil_bresp;
    uint32_t s_axil_bvalid;
    uint32_t s_axil_arready;
    uint32_t s_axil_rdata;
    uint32_t s_axil_rresp;
    uint32_t s_axil_rvalid;
    // AXI4 master
    uint32_t m_axi_awid;
    uint32_t m_axi_awlen;
    uint32_t m_axi_awsize;
    uint32_t m_axi_awburst;
    uint32_t m_axi_awvalid;
    uint32_t m_axi_wlast;
    uint32_t m_axi_wvalid;
    uint32_t m_axi_bready;
    uint32_t m_axi_arid;
    uint32_t m_axi_arlen;
    uint32_t m_axi_arsize;
    uint32_t m_axi_arburst;
    uint32_t m_axi_arvalid;
    uint32_t m_axi_rready;
    // AXI4-Stream TX
    uint32_t m_axis_tx_tlast;
    uint32_t m_axis_tx_tvalid;
    // Interrupt request (MSI-X vector)
    uint32_t irq_valid;
    uint32_t irq_vector;
};

// Evaluation modes (rnic_nic_set_eval_mode); the numbers are EvalMode in sim/src/ffi.rs.
enum EvalMode : uint32_t { EVAL_REFERENCE = 0, EVAL_FAST = 1, EVAL_CHECKED = 2 };

struct RnicNic {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<RNIC_MODEL> top;
    uint64_t cycle = 0;
    uint32_t mode = EVAL_REFERENCE;
    // The inputs of the last clock-low evaluation (valid once `evaluated`).
    NicInputs last_in{};
    bool evaluated = false;
    // Checked mode: the same design stepped the textbook way, and the first divergence.
    std::unique_ptr<VerilatedContext> ref_ctx;
    std::unique_ptr<RNIC_MODEL> ref;
    uint64_t mismatch_cycle = 0;
    uint32_t mismatch_word = 0;
    bool mismatched = false;
#if VM_TRACE
    std::unique_ptr<VerilatedFstC> tfp;
#endif
    // State profile (rnic_nic_state_profile_start): cycles the scheduler (`txs`) and the RX
    // engine (`rxe`) spent in each state code, counted at the start of each cycle.
    bool profile = false;
    uint64_t tx_hist[64]{};
    uint64_t rx_hist[64]{};
};

// Sizes of the two structs, for the Rust side's layout check.
void rnic_nic_abi(uint32_t* inputs_size, uint32_t* outputs_size) {
    *inputs_size = sizeof(NicInputs);
    *outputs_size = sizeof(NicOutputs);
}

// 1 if the model was built with waveform (FST) support.
uint32_t rnic_nic_has_trace(void) { return VM_TRACE ? 1 : 0; }

// A new model with its own Verilator context, clock low, settled. NULL on failure.
RnicNic* rnic_nic_new(void) {
    try {
        auto nic = std::make_unique<RnicNic>();
        nic->ctx = std::make_unique<VerilatedContext>();
#if VM_TRACE
        nic->ctx->traceEverOn(true);
#endif
        nic->top = std::make_unique<RNIC_MODEL>(nic->ctx.get(), "nic");
        nic->top->clock = 0;
        nic->top->reset = 0;
        nic->top->eval();
        return nic.release();
    } catch (...) {
        return nullptr;
    }
}

void rnic_nic_free(RnicNic* nic) {
    if (!nic) return;
    try {
#if VM_TRACE
        if (nic->tfp) nic->tfp->close();
#endif
        nic->top->final();
    } catch (...) {
    }
    delete nic;
}

static inline void copy_wide_in(VlWide<16>& dst, const uint32_t* src) {
    for (int i = 0; i < 16; ++i) dst[i] = src[i];
}
static inline void copy_wide_out(uint32_t* dst, const VlWide<16>& src) {
    for (int i = 0; i < 16; ++i) dst[i] = src[i];
}

// One clock cycle: apply `in` with the clock low and evaluate; copy the outputs (the values in
// effect during this cycle, including combinational responses to `in`); raise the clock and
// evaluate (the registers take their next values).
static void apply_inputs(RNIC_MODEL* t, const NicInputs* in) {
    t->reset = in->reset & 1;

    t->s_axil_awaddr = in->s_axil_awaddr & 0xFFFF;
    t->s_axil_awvalid = in->s_axil_awvalid & 1;
    t->s_axil_wdata = in->s_axil_wdata;
    t->s_axil_wstrb = in->s_axil_wstrb & 0xF;
    t->s_axil_wvalid = in->s_axil_wvalid & 1;
    t->s_axil_bready = in->s_axil_bready & 1;
    t->s_axil_araddr = in->s_axil_araddr & 0xFFFF;
    t->s_axil_arvalid = in->s_axil_arvalid & 1;
    t->s_axil_rready = in->s_axil_rready & 1;

    t->m_axi_awready = in->m_axi_awready & 1;
    t->m_axi_wready = in->m_axi_wready & 1;
    t->m_axi_bid = in->m_axi_bid & 0xF;
    t->m_axi_bresp = in->m_axi_bresp & 3;
    t->m_axi_bvalid = in->m_axi_bvalid & 1;
    t->m_axi_arready = in->m_axi_arready & 1;
    t->m_axi_rid = in->m_axi_rid & 0xF;
    copy_wide_in(t->m_axi_rdata, in->m_axi_rdata);
    t->m_axi_rresp = in->m_axi_rresp & 3;
    t->m_axi_rlast = in->m_axi_rlast & 1;
    t->m_axi_rvalid = in->m_axi_rvalid & 1;

    t->m_axis_tx_tready = in->m_axis_tx_tready & 1;
    copy_wide_in(t->s_axis_rx_tdata, in->s_axis_rx_tdata);
    t->s_axis_rx_tkeep = in->s_axis_rx_tkeep;
    t->s_axis_rx_tlast = in->s_axis_rx_tlast & 1;
    t->s_axis_rx_tvalid = in->s_axis_rx_tvalid & 1;
    t->s_axis_rx_tuser = in->s_axis_rx_tuser & 1;
    t->irq_ready = in->irq_ready & 1;

}

static void read_outputs(RNIC_MODEL* t, NicOutputs* out) {
    out->s_axil_awready = t->s_axil_awready;
    out->s_axil_wready = t->s_axil_wready;
    out->s_axil_bresp = t->s_axil_bresp;
    out->s_axil_bvalid = t->s_axil_bvalid;
    out->s_axil_arready = t->s_axil_arready;
    out->s_axil_rdata = t->s_axil_rdata;
    out->s_axil_rresp = t->s_axil_rresp;
    out->s_axil_rvalid = t->s_axil_rvalid;

    out->m_axi_awid = t->m_axi_awid;
    out->m_axi_awaddr = t->m_axi_awaddr;
    out->m_axi_awlen = t->m_axi_awlen;
    out->m_axi_awsize = t->m_axi_awsize;
    out->m_axi_awburst = t->m_axi_awburst;
    out->m_axi_awvalid = t->m_axi_awvalid;
    copy_wide_out(out->m_axi_wdata, t->m_axi_wdata);
    out->m_axi_wstrb = t->m_axi_wstrb;
    out->m_axi_wlast = t->m_axi_wlast;
    out->m_axi_wvalid = t->m_axi_wvalid;
    out->m_axi_bready = t->m_axi_bready;
    out->m_axi_arid = t->m_axi_arid;
    out->m_axi_araddr = t->m_axi_araddr;
    out->m_axi_arlen = t->m_axi_arlen;
    out->m_axi_arsize = t->m_axi_arsize;
    out->m_axi_arburst = t->m_axi_arburst;
    out->m_axi_arvalid = t->m_axi_arvalid;
    out->m_axi_rready = t->m_axi_rready;

    copy_wide_out(out->m_axis_tx_tdata, t->m_axis_tx_tdata);
    out->m_axis_tx_tkeep = t->m_axis_tx_tkeep;
    out->m_axis_tx_tlast = t->m_axis_tx_tlast;
    out->m_axis_tx_tvalid = t->m_axis_tx_tvalid;
    out->irq_valid = t->irq_valid;
    out->irq_vector = t->irq_vector;

}

#if RNIC_FAST_CYCLE
#define RNIC_CAT2(a, b) a##b
#define RNIC_CAT(a, b) RNIC_CAT2(a, b)
#define RNIC_ROOT_FN(name) RNIC_CAT(RNIC_ROOT, name)
// Verilator 5.006's scheduling functions of the generated model (external linkage, declared only
// inside the generated sources). build.rs enables this path only when it finds them.
// (This file's functions are extern "C"; these are C++ functions of the model.)
extern "C++" {
void RNIC_ROOT_FN(___eval_triggers__act)(RNIC_ROOT* vlSelf);
void RNIC_ROOT_FN(___eval_act)(RNIC_ROOT* vlSelf);
void RNIC_ROOT_FN(___eval_nba)(RNIC_ROOT* vlSelf);
}

// The rising edge without the input-combinational pass: the active/NBA loop of the generated
// _eval (same order, same convergence limit of 100 iterations).
static void eval_rising_edge(RNIC_ROOT* r) {
    uint32_t nba_iter = 0;
    bool nba_continue = true;
    while (nba_continue) {
        nba_continue = false;
        r->__VnbaTriggered.clear();
        r->__VactIterCount = 0;
        r->__VactContinue = 1;
        while (r->__VactContinue) {
            r->__VactContinue = 0;
            RNIC_ROOT_FN(___eval_triggers__act)(r);
            if (r->__VactTriggered.any()) {
                r->__VactContinue = 1;
                if (VL_UNLIKELY(r->__VactIterCount > 100)) {
                    VL_FATAL_MT(__FILE__, __LINE__, "", "Active region did not converge.");
                }
                r->__VactIterCount += 1;
                r->__VnbaTriggered.set(r->__VactTriggered);
                RNIC_ROOT_FN(___eval_act)(r);
            }
        }
        if (r->__VnbaTriggered.any()) {
            nba_continue = true;
            if (VL_UNLIKELY(nba_iter > 100)) {
                VL_FATAL_MT(__FILE__, __LINE__, "", "NBA region did not converge.");
            }
            nba_iter += 1;
            RNIC_ROOT_FN(___eval_nba)(r);
        }
    }
}
#endif

// The textbook cycle: inputs with the clock low, eval, outputs; clock high, eval.
static void cycle_reference(RNIC_MODEL* t, const NicInputs* in, NicOutputs* out) {
    t->clock = 0;
    apply_inputs(t, in);
    t->eval();
    read_outputs(t, out);
    t->clock = 1;
    t->eval();
}

// One clock cycle: apply `in` with the clock low and evaluate; copy the outputs (the values in
// effect during this cycle, including combinational responses to `in`); raise the clock and
// evaluate (the registers take their next values). Same results in every mode.
void rnic_nic_cycle(RnicNic* nic, const NicInputs* in, NicOutputs* out) {
    RNIC_MODEL* t = nic->top.get();
#if RNIC_STATE_PROFILE
    if (nic->profile) {
        // The registers hold this cycle's states (set at the last rising edge).
        const RNIC_ROOT* r = t->rootp;
        nic->tx_hist[r->top__DOT__txs__DOT__state__024q & 63] += 1;
        nic->rx_hist[r->top__DOT__rxe__DOT__state__024q & 63] += 1;
    }
#endif
#if RNIC_FAST_CYCLE
    if (nic->mode != EVAL_REFERENCE) {
        RNIC_ROOT* r = t->rootp;
        if (nic->evaluated && std::memcmp(&nic->last_in, in, sizeof(NicInputs)) == 0) {
            // Settled on these inputs at the last rising edge: only the edge detector must see
            // the clock low, as the skipped eval would have recorded it.
            r->__Vtrigrprev__TOP__clock = 0;
        } else {
            t->clock = 0;
            apply_inputs(t, in);
            t->eval();
            nic->last_in = *in;
            nic->evaluated = true;
        }
#if VM_TRACE
        if (nic->tfp) nic->tfp->dump(nic->cycle * 4000);
#endif
        read_outputs(t, out);
        t->clock = 1;
        eval_rising_edge(r);
        if (nic->ref) {
            NicOutputs want;
            cycle_reference(nic->ref.get(), in, &want);
            if (!nic->mismatched) {
                const uint32_t* a = reinterpret_cast<const uint32_t*>(out);
                const uint32_t* b = reinterpret_cast<const uint32_t*>(&want);
                for (uint32_t i = 0; i < sizeof(NicOutputs) / 4; ++i) {
                    if (a[i] != b[i]) {
                        nic->mismatched = true;
                        nic->mismatch_cycle = nic->cycle;
                        nic->mismatch_word = i;
                        break;
                    }
                }
            }
        }
    } else
#endif
    {
        t->clock = 0;
        apply_inputs(t, in);
        t->eval();
#if VM_TRACE
        if (nic->tfp) nic->tfp->dump(nic->cycle * 4000);
#endif
        read_outputs(t, out);
        t->clock = 1;
        t->eval();
    }
#if VM_TRACE
    if (nic->tfp) nic->tfp->dump(nic->cycle * 4000 + 2000);
#endif
    nic->cycle += 1;
    nic->ctx->time(nic->cycle * 4000);
}

// Selects how rnic_nic_cycle evaluates the model (EvalMode). Call before the first cycle. Returns
// the mode in effect: EVAL_REFERENCE when the model was built without the fast path, or when the
// checked mode's second model cannot be created.
uint32_t rnic_nic_set_eval_mode(RnicNic* nic, uint32_t mode) {
#if RNIC_FAST_CYCLE
    if (mode == EVAL_CHECKED && !nic->ref) {
        try {
            nic->ref_ctx = std::make_unique<VerilatedContext>();
            nic->ref = std::make_unique<RNIC_MODEL>(nic->ref_ctx.get(), "nic_ref");
            nic->ref->clock = 0;
            nic->ref->reset = 0;
            nic->ref->eval();
        } catch (...) {
            nic->ref.reset();
            nic->mode = EVAL_REFERENCE;
            return nic->mode;
        }
    }
    if (mode != EVAL_CHECKED) nic->ref.reset();
    nic->mode = mode <= EVAL_CHECKED ? mode : EVAL_REFERENCE;
#else
    (void)mode;
    nic->mode = EVAL_REFERENCE;
#endif
    return nic->mode;
}

// Checked mode: 1 and the first cycle and output word (32-bit index into NicOutputs) at which the
// fast evaluation's outputs differed from the textbook evaluation's; 0 while they agree.
uint32_t rnic_nic_eval_mismatch(const RnicNic* nic, uint64_t* cycle, uint32_t* word) {
    if (!nic->mismatched) return 0;
    *cycle = nic->mismatch_cycle;
    *word = nic->mismatch_word;
    return 1;
}

// Starts an FST waveform dump into `path` (NUL-terminated). Returns 0 on success, 1 if the model
// was built without tracing, 2 if the file could not be opened.
uint32_t rnic_nic_trace_open(RnicNic* nic, const char* path) {
#if VM_TRACE
    try {
        if (nic->tfp) {
            nic->tfp->close();
            nic->tfp.reset();
        }
        auto tfp = std::make_unique<VerilatedFstC>();
        nic->top->trace(tfp.get(), 99);
        tfp->open(path);
        if (!tfp->isOpen()) return 2;
        nic->tfp = std::move(tfp);
        return 0;
    } catch (...) {
        return 2;
    }
#else
    (void)nic;
    (void)path;
    return 1;
#endif
}

// Flushes and closes the waveform dump, if one is open.
void rnic_nic_trace_close(RnicNic* nic) {
#if VM_TRACE
    if (nic->tfp) {
        nic->tfp->close();
        nic->tfp.reset();
    }
#else
    (void)nic;
#endif
}

// Clears the state profile and starts counting from the next cycle. 1 when the model has the
// state registers the profile reads (RNIC_STATE_PROFILE), 0 otherwise.
uint32_t rnic_nic_state_profile_start(RnicNic* nic) {
#if RNIC_STATE_PROFILE
    std::memset(nic->tx_hist, 0, sizeof nic->tx_hist);
    std::memset(nic->rx_hist, 0, sizeof nic->rx_hist);
    nic->profile = true;
    return 1;
#else
    (void)nic;
    return 0;
#endif
}

// Copies the 64 counts of each engine into `tx` and `rx`. 1 when a profile was started, 0
// otherwise (the arrays are left alone).
uint32_t rnic_nic_state_profile_read(const RnicNic* nic, uint64_t* tx, uint64_t* rx) {
    if (!nic->profile) return 0;
    std::memcpy(tx, nic->tx_hist, sizeof nic->tx_hist);
    std::memcpy(rx, nic->rx_hist, sizeof nic->rx_hist);
    return 1;
}

}  // extern "C"
