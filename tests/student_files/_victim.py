"""Where the harmful student files aim: a folder of the instructor's (each test run writes its
own copy of this module next to them, naming a folder of its own)."""
VICTIM = "/tmp/numpy_mamba_grader_victim"
