def pytest_configure(config):
    config.addinivalue_line(
        "markers", "bitstream: runs the YoWASP FPGA tools (minutes; deselect with "
                   "-m 'not bitstream')")
