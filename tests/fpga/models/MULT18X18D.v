// Behavioural model of the ECP5 MULT18X18D in the configurations vtalab instantiates
// (hw/ecp5_dsp.py), from Lattice's ECP5 sysDSP usage guide (TN1267): P is the product of
// A and B, each signed when SIGNEDA / SIGNEDB is 1; with REG_OUTPUT_CLK = "CLK0" P comes
// from an output register clocked by CLK0 that loads when CE0 is 1 and clears
// synchronously when RST0 is 1 (RESETMODE "SYNC"); with REG_INPUTA_CLK / REG_INPUTB_CLK =
// "CLK0" A / B come through input registers clocked by CLK0 that load when the REG_INPUTx_CE
// enable (CE0 or CE1) is 1 and clear when RST0 is 1. Pipeline registers, the cascade inputs
// and the bypass are not modelled: a design using them fails to elaborate.
module MULT18X18D(
    input A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
    input B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
    input SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, CE1, RST0,
    output P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
    output P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33,
    output P34, P35);
    parameter REG_INPUTA_CLK = "NONE";
    parameter REG_INPUTA_CE = "CE0";
    parameter REG_INPUTA_RST = "RST0";
    parameter REG_INPUTB_CLK = "NONE";
    parameter REG_INPUTB_CE = "CE0";
    parameter REG_INPUTB_RST = "RST0";
    parameter REG_PIPELINE_CLK = "NONE";
    parameter REG_OUTPUT_CLK = "NONE";
    parameter REG_OUTPUT_CE = "CE0";
    parameter REG_OUTPUT_RST = "RST0";
    parameter GSR = "ENABLED";
    parameter RESETMODE = "SYNC";
    parameter SOURCEB_MODE = "B_SHIFT";
    parameter MULT_BYPASS = "DISABLED";
    parameter CLK0_DIV = "ENABLED";
    generate
        if ((REG_INPUTA_CLK != "NONE" && REG_INPUTA_CLK != "CLK0")
            || (REG_INPUTB_CLK != "NONE" && REG_INPUTB_CLK != "CLK0")
            || (REG_INPUTA_CE != "CE0" && REG_INPUTA_CE != "CE1")
            || (REG_INPUTB_CE != "CE0" && REG_INPUTB_CE != "CE1")
            || REG_INPUTA_RST != "RST0" || REG_INPUTB_RST != "RST0" || REG_PIPELINE_CLK != "NONE"
            || (REG_OUTPUT_CLK != "NONE" && REG_OUTPUT_CLK != "CLK0")
            || REG_OUTPUT_CE != "CE0" || REG_OUTPUT_RST != "RST0" || RESETMODE != "SYNC"
            || MULT_BYPASS != "DISABLED")
            ERROR_UNMODELLED_MULT18X18D_MODE error();
    endgenerate
    wire [17:0] a_in = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
    wire [17:0] b_in = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
    reg [17:0] a_held = 18'd0, b_held = 18'd0;
    wire a_ce = (REG_INPUTA_CE == "CE1") ? CE1 : CE0;
    wire b_ce = (REG_INPUTB_CE == "CE1") ? CE1 : CE0;
    always @(posedge CLK0) begin
        if (RST0) a_held <= 18'd0; else if (a_ce) a_held <= a_in;
        if (RST0) b_held <= 18'd0; else if (b_ce) b_held <= b_in;
    end
    wire [17:0] a = (REG_INPUTA_CLK == "CLK0") ? a_held : a_in;
    wire [17:0] b = (REG_INPUTB_CLK == "CLK0") ? b_held : b_in;
    wire signed [18:0] sa = {SIGNEDA & a[17], a};
    wire signed [18:0] sb = {SIGNEDB & b[17], b};
    wire signed [37:0] full = sa * sb;
    reg [35:0] held = 36'd0;
    always @(posedge CLK0)
        if (RST0) held <= 36'd0;
        else if (CE0) held <= full[35:0];
    wire [35:0] p = (REG_OUTPUT_CLK == "CLK0") ? held : full[35:0];
    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
            P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1,
            P0} = p;
endmodule
