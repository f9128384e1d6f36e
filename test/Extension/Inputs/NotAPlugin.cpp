// A shared library without tessel_plugin_info: tesselc must refuse it.
extern "C" int not_a_tessel_plugin() { return 42; }
