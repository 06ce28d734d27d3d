/* A shared library without the opgraph entry point. */
__attribute__((visibility("default"))) int not_a_package_answer(void) { return 42; }
