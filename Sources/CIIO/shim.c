#include "ciio.h"

void ciio_library_version(unsigned int *major, unsigned int *minor)
{
    char tag[8];
    iio_library_get_version(major, minor, tag);
}
