def pytest_configure(config):
    config.addinivalue_line(
        "markers", "bitstream: builds a real FPGA bitstream with the YoWASP tools "
                   "(minutes; deselect with -m 'not bitstream')")
