#include "clibcrypto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// OpenSSL 3's prototypes (openssl/hmac.h, openssl/evp.h), so that building needs no libssl-dev: the EVP_MD is opaque.
typedef const void *(*evp_sha256_function)(void);
typedef unsigned char *(*hmac_function)(const void *md, const void *key, int key_length, const unsigned char *data,
                                        size_t data_length, unsigned char *out, unsigned int *out_length);

#define CLIBCRYPTO_LIBRARY "libcrypto.so.3"
static pthread_once_t once = PTHREAD_ONCE_INIT;
static evp_sha256_function p_EVP_sha256;
static hmac_function p_HMAC;
static char failure[512];

static void load(void) {
    // RTLD_LOCAL: its symbols stay out of the global scope.
    void *library = dlopen(CLIBCRYPTO_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(failure, sizeof failure, "cannot load %s: %s", CLIBCRYPTO_LIBRARY, dlerror());
        return;
    }
    p_EVP_sha256 = (evp_sha256_function)dlsym(library, "EVP_sha256");
    p_HMAC = (hmac_function)dlsym(library, "HMAC");
    if (!p_EVP_sha256 || !p_HMAC) snprintf(failure, sizeof failure, "%s has no EVP_sha256 or HMAC", CLIBCRYPTO_LIBRARY);
}

int clibcrypto_hmac_sha256(const void *key, size_t key_length, const void *message, size_t message_length,
                           unsigned char out[32]) {
    pthread_once(&once, load);
    if (!p_EVP_sha256 || !p_HMAC) return -1;
    if (key_length > 0x7fffffff) return -2;
    unsigned int length = 0;
    if (!p_HMAC(p_EVP_sha256(), key, (int)key_length, message, message_length, out, &length) || length != 32) return -2;
    return 0;
}

const char *clibcrypto_error(void) {
    pthread_once(&once, load);
    return failure[0] ? failure : "HMAC-SHA256 failed";
}
