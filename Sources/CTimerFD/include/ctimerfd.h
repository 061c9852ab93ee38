// The kernel's timerfd, which Swift's Glibc module does not export: the header as it is, nothing added.
#ifndef CTIMERFD_H
#define CTIMERFD_H
#include <sys/timerfd.h>
#endif
