// Native harness of the Verilated Core: a DRAM model behind the AXI4 master (latency,
// random back-pressure on every channel, protocol checks), an AXI4-Lite host for the
// control registers, a watchdog, a stall detector, per-instruction timeline events and an
// optional trace. A burst past the end of DRAM is a program's error, not the hardware's:
// it is served (reads return zeros, writes are dropped) and reported after the run, so the
// core finishes the run and its own error registers can be read.
// Python loads it with ctypes; one vt_run() call runs a whole program to done.
// Port names, register offsets and status bits come from the generated vtalab_config.h.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "Vtop.h"
#include "Vtop___024root.h"
#include "verilated.h"
#include "vtalab_config.h"
#if VM_TRACE_FST
#include "verilated_fst_c.h"
typedef VerilatedFstC TraceFile;
#elif VM_TRACE
#include "verilated_vcd_c.h"
typedef VerilatedVcdC TraceFile;
#endif

namespace {

struct Burst { uint64_t addr; uint32_t beats; uint64_t ready_at; };
struct Event { uint64_t module, start, run, end; };

template <typename T> void put_bus(T& port, const uint8_t* src) {
    port = 0; memcpy(&port, src, VT_BUS_BYTES);
}
template <std::size_t N> void put_bus(VlWide<N>& port, const uint8_t* src) {
    memcpy(port.data(), src, VT_BUS_BYTES);
}
template <typename T> void get_bus(const T& port, uint8_t* dst) { memcpy(dst, &port, VT_BUS_BYTES); }
template <std::size_t N> void get_bus(const VlWide<N>& port, uint8_t* dst) {
    memcpy(dst, port.data(), VT_BUS_BYTES);
}
template <typename T> uint64_t as_u64(const T& v) { return (uint64_t)v; }
template <std::size_t N> uint64_t as_u64(const VlWide<N>& v) { return v[0]; }

struct Harness {
    VerilatedContext ctx;
    Vtop* top;
    std::vector<uint8_t> dram;
    uint64_t cycle = 0, rng = 0x9E3779B97F4A7C15ull;
    uint32_t read_latency = 1, write_latency = 1, pressure = 0;   // pressure: p * 2^16
    std::deque<Burst> reads, writes, bresps;
    bool r_valid = false, b_valid = false;
    uint64_t prev_ar[4] = {}, prev_aw[4] = {};
    bool prev_ar_wait = false, prev_aw_wait = false, prev_w_wait = false;
    uint8_t prev_w[VT_BUS_BYTES + 8] = {};
    std::string error, dram_error;
    uint64_t quiet = 0;           // cycles in a row with no module running and no AXI traffic
    // timeline: busy edges per module (load, compute, store)
    bool timeline = false, was_busy[3] = {}, was_waiting[3] = {};
    uint64_t started[3] = {}, run_at[3] = {}, begun[3] = {}, run_origin = 0;
    std::vector<Event> events;
#if VM_TRACE
    TraceFile* tfp = nullptr;
#endif

    Harness(uint64_t bytes, uint64_t seed) : dram(bytes, 0) {
#if VM_TRACE
        ctx.traceEverOn(true);
#endif
        top = new Vtop(&ctx, "top");
        if (seed) rng ^= seed * 0xBF58476D1CE4E5B9ull;
        reset();
    }
    ~Harness() {
#if VM_TRACE
        if (tfp) { tfp->close(); delete tfp; }
#endif
        top->final();
        delete top;
    }

    bool busy_roll() {            // true with probability pressure / 2^16
        if (!pressure) return false;
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        return (rng & 0xFFFF) < pressure;
    }
    void fail(const std::string& msg) { if (error.empty()) error = msg; }

    void eval_at(uint64_t t) {
        top->eval();
#if VM_TRACE
        if (tfp) tfp->dump(t);
#else
        (void)t;
#endif
    }

    // ---- one clock cycle: drive slave inputs, settle, sample, rising edge ---------------
    void drive() {
        top->VT_AXI(arready) = reads.size() < 32 && !busy_roll();
        top->VT_AXI(awready) = writes.size() < 32 && !busy_roll();
        top->VT_AXI(wready) = !writes.empty() && !busy_roll();
        if (!r_valid && !reads.empty() && reads.front().ready_at <= cycle && !busy_roll())
            r_valid = true;
        top->VT_AXI(rvalid) = r_valid;
        if (r_valid) {
            const Burst& b = reads.front();
            static const uint8_t zeros[VT_BUS_BYTES] = {};
            put_bus(top->VT_AXI(rdata), inside(b.addr) ? &dram[b.addr] : zeros);
            top->VT_AXI(rlast) = b.beats == 1;
        }
        top->VT_AXI(rresp) = 0;
        if (!b_valid && !bresps.empty() && bresps.front().ready_at <= cycle && !busy_roll())
            b_valid = true;
        top->VT_AXI(bvalid) = b_valid;
        top->VT_AXI(bresp) = 0;
    }

    bool inside(uint64_t addr) const { return addr + VT_BUS_BYTES <= dram.size(); }

    // false for a protocol error (the run stops); a burst past DRAM is served, noted once
    bool check_burst(const char* ch, uint64_t addr, uint32_t len, uint32_t size, uint32_t burst) {
        uint64_t beats = len + 1, bytes = beats * VT_BUS_BYTES;
        char msg[256];
        if ((1u << size) != VT_BUS_BYTES || burst != 1 || addr % VT_BUS_BYTES) {
            snprintf(msg, sizeof msg, "%s burst must be INCR, bus-sized and aligned, not addr "
                     "%#llx size %u burst %u", ch, (unsigned long long)addr, size, burst);
        } else if (addr / 4096 != (addr + bytes - 1) / 4096) {
            snprintf(msg, sizeof msg, "%s burst at %#llx of %llu beats must not cross 4 KiB",
                     ch, (unsigned long long)addr, (unsigned long long)beats);
        } else {
            if (addr + bytes > dram.size() && dram_error.empty()) {
                snprintf(msg, sizeof msg, "%s burst %#llx..%#llx must lie inside DRAM (%llu "
                         "bytes)", ch, (unsigned long long)addr,
                         (unsigned long long)(addr + bytes - 1), (unsigned long long)dram.size());
                dram_error = msg;
            }
            return true;
        }
        fail(msg);
        return false;
    }

    void check_stable(const char* ch, bool prev_wait, bool valid, bool same) {
        if (prev_wait && !valid) fail(std::string(ch) + "valid must stay high until its handshake");
        else if (prev_wait && !same) fail(std::string(ch) + " payload must stay stable while valid");
    }

    // Payloads are read only while a channel is valid or was left waiting (that is when
    // the stability rule and the handshake need them): most cycles touch only the flags.
    void sample() {
        const bool arv = top->VT_AXI(arvalid), arr = top->VT_AXI(arready);
        if (arv || prev_ar_wait) {
            uint64_t ar[4] = {as_u64(top->VT_AXI(araddr)), top->VT_AXI(arlen),
                              top->VT_AXI(arsize), top->VT_AXI(arburst)};
            check_stable("ar", prev_ar_wait, arv, !memcmp(ar, prev_ar, sizeof ar));
            memcpy(prev_ar, ar, sizeof ar);
            if (arv && arr && check_burst("read", ar[0], ar[1], ar[2], ar[3]))
                reads.push_back({ar[0], (uint32_t)ar[1] + 1, cycle + read_latency});
        }
        prev_ar_wait = arv && !arr;
        const bool awv = top->VT_AXI(awvalid), awr = top->VT_AXI(awready);
        uint64_t aw[4] = {};
        if (awv || prev_aw_wait) {
            aw[0] = as_u64(top->VT_AXI(awaddr)); aw[1] = top->VT_AXI(awlen);
            aw[2] = top->VT_AXI(awsize); aw[3] = top->VT_AXI(awburst);
            check_stable("aw", prev_aw_wait, awv, !memcmp(aw, prev_aw, sizeof aw));
            memcpy(prev_aw, aw, sizeof aw);
        }
        prev_aw_wait = awv && !awr;
        const bool wv = top->VT_AXI(wvalid), wr = top->VT_AXI(wready);
        if (wv || prev_w_wait) {
            uint8_t w[VT_BUS_BYTES + 8];
            get_bus(top->VT_AXI(wdata), w);
            const uint64_t strb = as_u64(top->VT_AXI(wstrb));
            memcpy(&w[VT_BUS_BYTES], &strb, 8);
            check_stable("w", prev_w_wait, wv, !memcmp(w, prev_w, sizeof w));
            memcpy(prev_w, w, sizeof w);
            if (wv && wr) write_beat(strb, top->VT_AXI(wlast));
        }
        prev_w_wait = wv && !wr;
        if (awv && awr && check_burst("write", aw[0], aw[1], aw[2], aw[3]))
            writes.push_back({aw[0], (uint32_t)aw[1] + 1, 0});
        if (b_valid && top->VT_AXI(bready)) { bresps.pop_front(); b_valid = false; }
    }

    void take_r(bool fired) {      // R stays valid until accepted
        if (!r_valid || !fired) return;
        Burst& b = reads.front();
        b.addr += VT_BUS_BYTES;
        if (--b.beats == 0) reads.pop_front();
        r_valid = false;
    }

    void write_beat(uint64_t strb, bool last) {
        Burst& b = writes.front();
        const uint8_t* data = prev_w;
        if (inside(b.addr))
            for (unsigned lane = 0; lane < VT_BUS_BYTES; ++lane)
                if (strb >> lane & 1) dram[b.addr + lane] = data[lane];
        if (last != (b.beats == 1)) fail("WLAST must mark the last beat of each write burst");
        b.addr += VT_BUS_BYTES;
        if (--b.beats == 0) {
            writes.pop_front();
            bresps.push_back({0, 0, cycle + write_latency});
        }
    }

    void watch_modules() {
        const bool busy[3] = {(bool)VT_SIG(load_busy), (bool)VT_SIG(compute_busy),
                              (bool)VT_SIG(store_busy)};
        const bool waiting[3] = {(bool)VT_SIG(load_wait), (bool)VT_SIG(compute_wait_l2c) ||
                                 (bool)VT_SIG(compute_wait_s2c), (bool)VT_SIG(store_wait)};
        bool running = !reads.empty() || !writes.empty() || !bresps.empty() || r_valid
            || b_valid || top->VT_AXI(arvalid) || top->VT_AXI(awvalid) || top->VT_AXI(wvalid);
        for (int m = 0; m < 3; ++m) running = running || (busy[m] && !waiting[m]);
        quiet = running ? 0 : quiet + 1;
        for (int m = 0; m < 3; ++m) {
            if (busy[m] && !was_busy[m]) { started[m] = cycle; run_at[m] = 0; ++begun[m]; }
            if (busy[m] && !waiting[m] && !run_at[m]) run_at[m] = cycle;
            if (!busy[m] && was_busy[m] && timeline)
                events.push_back({(uint64_t)m, started[m] - run_origin,
                                  (run_at[m] ? run_at[m] : cycle) - run_origin,
                                  cycle - run_origin});
            was_busy[m] = busy[m];
            was_waiting[m] = waiting[m];
        }
    }

    // Two evals per cycle: inputs, settle with clk low, sample, rising edge. Used for the
    // register accesses (the AXI4-Lite outputs depend combinationally on their inputs)
    // and in trace builds, whose waveforms then show both clock phases.
    void half() {
        drive();
        top->clk = 0;
        eval_at(2 * cycle);
        sample();
        take_r(top->VT_AXI(rready));
    }
    void rise() {
        top->clk = 1;
        eval_at(2 * cycle + 1);
        ++cycle;
        watch_modules();
    }
    // One eval per cycle. Apart from RREADY every AXI4 output depends only on state, so
    // the values left by the last edge are this cycle's; the wrapper registers the R
    // handshake (sim_r_fire). Verilator sees a rising edge when the clock's previous
    // value is 0, which is set directly instead of by a second eval with clk low.
    void step() {
#if VT_FAST_EDGE && !VM_TRACE
        drive();
        sample();
        top->clk = 1;
        top->rootp->__Vtrigprevexpr___TOP__clk__0 = 0;
        top->eval();
        ++cycle;
        take_r(top->sim_r_fire);
        watch_modules();
#else
        half();
        rise();
#endif
    }

    void reset() {
        top->rst = 1;
        top->VT_CTRL(awvalid) = 0; top->VT_CTRL(wvalid) = 0; top->VT_CTRL(arvalid) = 0;
        top->VT_CTRL(bready) = 1; top->VT_CTRL(rready) = 1; top->VT_CTRL(wstrb) = 0xF;
        top->VT_AXI(bvalid) = 0; top->VT_AXI(rvalid) = 0;
        reads.clear(); writes.clear(); bresps.clear();
        r_valid = b_valid = prev_ar_wait = prev_aw_wait = prev_w_wait = false;
        for (int k = 0; k < 4; ++k) step();
        top->rst = 0;
        step();
        for (int m = 0; m < 3; ++m) was_busy[m] = false;
    }

    // ---- AXI4-Lite host ----------------------------------------------------------------
    void reg_write(uint32_t offset, uint32_t value) {
        top->VT_CTRL(awaddr) = offset; top->VT_CTRL(wdata) = value;
        top->VT_CTRL(awvalid) = 1; top->VT_CTRL(wvalid) = 1;
        for (int k = 0; k < 64; ++k) {
            half();
            bool accepted = top->VT_CTRL(awready) && top->VT_CTRL(wready);
            rise();
            if (accepted) break;
        }
        top->VT_CTRL(awvalid) = 0; top->VT_CTRL(wvalid) = 0;
        for (int k = 0; k < 64; ++k) {
            half();
            bool done = top->VT_CTRL(bvalid);
            rise();
            if (done) return;
        }
        fail("AXI4-Lite write must get a response within 64 cycles");
    }
    uint32_t reg_read(uint32_t offset) {
        top->VT_CTRL(araddr) = offset; top->VT_CTRL(arvalid) = 1;
        for (int k = 0; k < 64; ++k) {
            half();
            bool accepted = top->VT_CTRL(arready);
            rise();
            if (accepted) break;
        }
        top->VT_CTRL(arvalid) = 0;
        for (int k = 0; k < 64; ++k) {
            half();
            bool valid = top->VT_CTRL(rvalid);
            uint32_t value = top->VT_CTRL(rdata);
            rise();
            if (valid) return value;
        }
        fail("AXI4-Lite read must get a response within 64 cycles");
        return 0;
    }

    // ---- one program: 0 done, 1 watchdog, 2 bus protocol error, 3 stalled -----------------
    // Stalled: STALL_CYCLES cycles in a row with every module idle or waiting on a token and
    // no AXI traffic, yet not done. The fetch unit refuses a program whose tokens cannot be
    // satisfied before anything waits, so this catches only what it cannot see.
    static constexpr uint64_t STALL_CYCLES = 1024;
    int run(uint64_t insn_addr, uint32_t count, uint64_t max_cycles) {
        error.clear();
        dram_error.clear();
        events.clear();
        for (int m = 0; m < 3; ++m) begun[m] = 0;
        reg_write(VT_REG_INSN_ADDR, (uint32_t)insn_addr);
        reg_write(VT_REG_INSN_ADDR + 4, (uint32_t)(insn_addr >> 32));
        reg_write(VT_REG_INSN_COUNT, count);
        run_origin = cycle + 2;     // the START write lands a cycle after it is accepted
                                    // (hw/control.py registers writes), running a cycle later
        reg_write(VT_REG_START, 1);
        uint64_t limit = cycle + max_cycles;
        quiet = 0;
        while (!top->done) {
            if (!error.empty()) return 2;
            if (cycle >= limit) return 1;
            if (quiet >= STALL_CYCLES) return 3;
            step();
        }
        return error.empty() ? 0 : 2;
    }
};

}  // namespace

// Every entry point makes its model's context the thread's current one: Verilator's
// scope bookkeeping goes through it, and another model may have been made or deleted since.
static Harness* H(void* h) {
    auto* s = static_cast<Harness*>(h);
    Verilated::threadContextp(&s->ctx);
    return s;
}

extern "C" {
void* vt_create(uint64_t dram_bytes, uint64_t seed) { return new Harness(dram_bytes, seed); }
void vt_destroy(void* h) { delete H(h); }
uint8_t* vt_dram(void* h) { return H(h)->dram.data(); }
void vt_set_timing(void* h, uint32_t read_latency, uint32_t write_latency, uint32_t pressure) {
    auto* s = H(h);
    s->read_latency = read_latency; s->write_latency = write_latency; s->pressure = pressure;
}
void vt_set_seed(void* h, uint64_t seed) {
    H(h)->rng = 0x9E3779B97F4A7C15ull ^ (seed * 0xBF58476D1CE4E5B9ull);
}
void vt_reset(void* h) { H(h)->reset(); }
uint32_t vt_reg_read(void* h, uint32_t offset) { return H(h)->reg_read(offset); }
void vt_reg_write(void* h, uint32_t offset, uint32_t value) {
    H(h)->reg_write(offset, value);
}
int vt_run(void* h, uint64_t insn_addr, uint32_t count, uint64_t max_cycles) {
    return H(h)->run(insn_addr, count, max_cycles);
}
uint64_t vt_cycle(void* h) { return H(h)->cycle; }
const char* vt_error(void* h) { return H(h)->error.c_str(); }
const char* vt_dram_error(void* h) { return H(h)->dram_error.c_str(); }
uint64_t vt_begun(void* h, int module) { return H(h)->begun[module]; }
void vt_timeline(void* h, int enable) { H(h)->timeline = enable != 0; }
uint64_t vt_event_count(void* h) { return H(h)->events.size(); }
void vt_events(void* h, uint64_t* out) {
    auto& ev = H(h)->events;
    if (!ev.empty()) memcpy(out, ev.data(), ev.size() * sizeof(Event));
}
int vt_trace_open(void* h, const char* path) {
#if VM_TRACE
    auto* s = H(h);
    if (s->tfp) return 0;
    s->tfp = new TraceFile;
    s->top->trace(s->tfp, 99);
    s->tfp->open(path);
    return 1;
#else
    (void)h; (void)path;
    return 0;
#endif
}
void vt_trace_close(void* h) {
#if VM_TRACE
    auto* s = H(h);
    if (s->tfp) { s->tfp->close(); delete s->tfp; s->tfp = nullptr; }
#else
    (void)h;
#endif
}
}
