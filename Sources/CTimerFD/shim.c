// Empty: the target exists for its header (include/ctimerfd.h).
