/* A shared library that exports no tuner symbol: NCCL_TUNER_PLUGIN pointing here must leave the
 * communicator on baton's own tuner with an INFO line saying the plugin is unsupported. */
__attribute__((visibility("default"))) int notATunerPlugin = 1;
