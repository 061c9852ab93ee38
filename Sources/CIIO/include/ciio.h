// Thin shim over libiio: plain functions and structs for the Swift acquisition layer. No logic here.
#ifndef CIIO_H
#define CIIO_H

#include <iio.h>

/// libiio's own version, as the library reports it at run time.
void ciio_library_version(unsigned int *major, unsigned int *minor);

#endif
