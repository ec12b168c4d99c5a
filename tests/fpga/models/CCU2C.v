// Behavioural model of the ECP5 CCU2C (two bits of a carry chain) in the configuration
// vtalab instantiates (hw/carry_rows.py), from Lattice's ECP5 family data sheet
// (FPGA-DS-02012, slice in ripple mode) and library guide: each half is a LUT4 whose output
// F is the bit's propagate (INIT indexed by D*8 + C*4 + B*2 + A); its sum is F ^ carry in,
// and its carry out is the carry in when F is 1, else the generate: the LUT's entry at
// C = D = 0 (INIT[B*2 + A]). Only INJECT1_x = "NO" is modelled (the carry used as such).
module CCU2C(input CIN, input A0, B0, C0, D0, A1, B1, C1, D1,
             output S0, S1, output COUT);
    parameter [15:0] INIT0 = 16'h0000;
    parameter [15:0] INIT1 = 16'h0000;
    parameter INJECT1_0 = "NO";
    parameter INJECT1_1 = "NO";
    initial begin
        if (INJECT1_0 != "NO" || INJECT1_1 != "NO") begin
            $display("CCU2C model: only INJECT1_x = NO is modelled");
            $finish;
        end
    end
    wire f0 = INIT0[{D0, C0, B0, A0}];
    wire g0 = INIT0[{2'b00, B0, A0}];
    wire carry0 = f0 ? CIN : g0;
    wire f1 = INIT1[{D1, C1, B1, A1}];
    wire g1 = INIT1[{2'b00, B1, A1}];
    assign S0 = f0 ^ CIN;
    assign S1 = f1 ^ carry0;
    assign COUT = f1 ? carry0 : g1;
endmodule
