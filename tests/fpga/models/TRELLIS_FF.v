// Behavioural model of the ECP5 TRELLIS_FF (the slice flip-flop nextpnr places) in the
// configuration vtalab instantiates (hw/registers.py replicated_flag), from Lattice's ECP5
// family data sheet (FPGA-DS-02012): Q loads DI on the rising edge of CLK; with
// CEMUX = "1" the clock enable is always on, with CEMUX = "CE" it is CE; with
// SRMODE = "LSR_OVER_CE" a high LSR sets Q synchronously to the REGSET value ("RESET": 0,
// "SET": 1) whatever the enable. Other modes (asynchronous set/reset, inverted clock or
// LSR) are not modelled: a design using them fails to elaborate.
module TRELLIS_FF(input CLK, input CE, input LSR, input DI, output reg Q);
    parameter GSR = "ENABLED";
    parameter CEMUX = "1";
    parameter CLKMUX = "CLK";
    parameter LSRMUX = "LSR";
    parameter REGSET = "RESET";
    parameter SRMODE = "LSR_OVER_CE";
    initial begin
        if (CLKMUX != "CLK" || LSRMUX != "LSR" || SRMODE != "LSR_OVER_CE" ||
            (CEMUX != "1" && CEMUX != "CE")) begin
            $display("TRELLIS_FF model: unsupported mode");
            $finish;
        end
        Q = (REGSET == "SET");
    end
    wire enabled = (CEMUX == "1") ? 1'b1 : CE;
    always @(posedge CLK) begin
        if (LSR)
            Q <= (REGSET == "SET");
        else if (enabled)
            Q <= DI;
    end
endmodule
