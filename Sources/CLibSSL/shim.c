#include "clibssl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// OpenSSL 3's prototypes and constants (openssl/ssl.h, x509_vfy.h, err.h), so that building needs no libssl-dev:
// every handle is opaque.
typedef const void *(*method_function)(void);
typedef void *(*context_new_function)(const void *method);
typedef void (*free_function)(void *object);
typedef void (*set_verify_function)(void *context, int mode, void *callback);
typedef int (*load_verify_function)(void *context, const char *file, const char *path);
typedef int (*context_function)(void *context);
typedef int (*context_file_function)(void *context, const char *file);
typedef int (*context_file_type_function)(void *context, const char *file, int type);
typedef long (*ctrl_function)(void *object, int command, long argument, void *pointer);
typedef void *(*connection_new_function)(void *context);
typedef int (*set_fd_function)(void *connection, int descriptor);
typedef int (*set_text_function)(void *object, const char *text);
typedef void *(*get_param_function)(void *connection);
typedef int (*connection_function)(void *connection);
typedef int (*io_function)(void *connection, void *buffer, int length);
typedef int (*get_error_function)(const void *connection, int result);
typedef long (*verify_result_function)(const void *connection);
typedef const char *(*verify_words_function)(long result);
typedef unsigned long (*error_get_function)(void);
typedef const char *(*error_reason_function)(unsigned long error);
typedef void (*error_clear_function)(void);

enum {
    VERIFY_PEER = 0x01, FILETYPE_PEM = 1,
    CTRL_MODE = 33, CTRL_SET_TLSEXT_HOSTNAME = 55, CTRL_SET_MIN_PROTO_VERSION = 123,
    NAMETYPE_HOST_NAME = 0, TLS1_2 = 0x0303,
    MODE_ENABLE_PARTIAL_WRITE = 0x1, MODE_ACCEPT_MOVING_WRITE_BUFFER = 0x2,
    ERROR_WANT_READ = 2, ERROR_WANT_WRITE = 3, ERROR_ZERO_RETURN = 6,
    V_ERR_HOSTNAME_MISMATCH = 62, V_ERR_IP_ADDRESS_MISMATCH = 64,
};

#define CLIBSSL_LIBRARY "libssl.so.3"
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_failure[512];

static method_function p_TLS_client_method;
static context_new_function p_SSL_CTX_new;
static free_function p_SSL_CTX_free;
static set_verify_function p_SSL_CTX_set_verify;
static load_verify_function p_SSL_CTX_load_verify_locations;
static context_function p_SSL_CTX_set_default_verify_paths;
static context_file_function p_SSL_CTX_use_certificate_chain_file;
static context_file_type_function p_SSL_CTX_use_PrivateKey_file;
static context_function p_SSL_CTX_check_private_key;
static ctrl_function p_SSL_CTX_ctrl;
static connection_new_function p_SSL_new;
static free_function p_SSL_free;
static set_fd_function p_SSL_set_fd;
static set_text_function p_SSL_set1_host;
static get_param_function p_SSL_get0_param;
static set_text_function p_X509_VERIFY_PARAM_set1_ip_asc;
static ctrl_function p_SSL_ctrl;
static connection_function p_SSL_connect;
static io_function p_SSL_read;
static io_function p_SSL_write;
static connection_function p_SSL_shutdown;
static get_error_function p_SSL_get_error;
static verify_result_function p_SSL_get_verify_result;
static verify_words_function p_X509_verify_cert_error_string;
static error_get_function p_ERR_get_error;
static error_reason_function p_ERR_reason_error_string;
static error_clear_function p_ERR_clear_error;

static void load(void) {
    // RTLD_LOCAL: its symbols stay out of the global scope. dlsym on its handle also finds libcrypto's (X509_, ERR_).
    void *library = dlopen(CLIBSSL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_failure, sizeof load_failure, "cannot load %s: %s", CLIBSSL_LIBRARY, dlerror());
        return;
    }
#define RESOLVE(name, type) \
    if (!(p_##name = (type)dlsym(library, #name))) { \
        snprintf(load_failure, sizeof load_failure, "%s has no %s (OpenSSL 1.1 or later is needed)", CLIBSSL_LIBRARY, #name); \
        return; \
    }
    RESOLVE(TLS_client_method, method_function)
    RESOLVE(SSL_CTX_new, context_new_function)
    RESOLVE(SSL_CTX_free, free_function)
    RESOLVE(SSL_CTX_set_verify, set_verify_function)
    RESOLVE(SSL_CTX_load_verify_locations, load_verify_function)
    RESOLVE(SSL_CTX_set_default_verify_paths, context_function)
    RESOLVE(SSL_CTX_use_certificate_chain_file, context_file_function)
    RESOLVE(SSL_CTX_use_PrivateKey_file, context_file_type_function)
    RESOLVE(SSL_CTX_check_private_key, context_function)
    RESOLVE(SSL_CTX_ctrl, ctrl_function)
    RESOLVE(SSL_new, connection_new_function)
    RESOLVE(SSL_free, free_function)
    RESOLVE(SSL_set_fd, set_fd_function)
    RESOLVE(SSL_set1_host, set_text_function)
    RESOLVE(SSL_get0_param, get_param_function)
    RESOLVE(X509_VERIFY_PARAM_set1_ip_asc, set_text_function)
    RESOLVE(SSL_ctrl, ctrl_function)
    RESOLVE(SSL_connect, connection_function)
    RESOLVE(SSL_read, io_function)
    RESOLVE(SSL_write, io_function)
    RESOLVE(SSL_shutdown, connection_function)
    RESOLVE(SSL_get_error, get_error_function)
    RESOLVE(SSL_get_verify_result, verify_result_function)
    RESOLVE(X509_verify_cert_error_string, verify_words_function)
    RESOLVE(ERR_get_error, error_get_function)
    RESOLVE(ERR_reason_error_string, error_reason_function)
    RESOLVE(ERR_clear_error, error_clear_function)
#undef RESOLVE
}

int clibssl_library_init(void) {
    pthread_once(&once, load);
    return load_failure[0] ? -1 : 0;
}

const char *clibssl_load_failure(void) { return load_failure; }

clibssl_context *clibssl_context_new(void) {
    void *context = p_SSL_CTX_new(p_TLS_client_method());
    if (!context) return NULL;
    p_SSL_CTX_set_verify(context, VERIFY_PEER, NULL);
    p_SSL_CTX_ctrl(context, CTRL_SET_MIN_PROTO_VERSION, TLS1_2, NULL);
    p_SSL_CTX_ctrl(context, CTRL_MODE, MODE_ENABLE_PARTIAL_WRITE | MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
    return context;
}

void clibssl_context_free(clibssl_context *context) {
    if (context) p_SSL_CTX_free(context);
}

int clibssl_context_trust(clibssl_context *context, const char *ca_file) {
    return ca_file ? p_SSL_CTX_load_verify_locations(context, ca_file, NULL) : p_SSL_CTX_set_default_verify_paths(context);
}

int clibssl_context_use_certificate(clibssl_context *context, const char *cert_file, const char *key_file) {
    if (p_SSL_CTX_use_certificate_chain_file(context, cert_file) != 1) return 0;
    if (p_SSL_CTX_use_PrivateKey_file(context, key_file, FILETYPE_PEM) != 1) return 0;
    return p_SSL_CTX_check_private_key(context);
}

clibssl_connection *clibssl_connection_new(clibssl_context *context, int descriptor) {
    void *connection = p_SSL_new(context);
    if (!connection) return NULL;
    if (p_SSL_set_fd(connection, descriptor) != 1) {
        p_SSL_free(connection);
        return NULL;
    }
    return connection;
}

void clibssl_connection_free(clibssl_connection *connection) {
    if (connection) p_SSL_free(connection);
}

int clibssl_expect_host_name(clibssl_connection *connection, const char *name) {
    if (p_SSL_set1_host(connection, name) != 1) return 0;
    return p_SSL_ctrl(connection, CTRL_SET_TLSEXT_HOSTNAME, NAMETYPE_HOST_NAME, (void *)name) == 1;
}

int clibssl_expect_ip_address(clibssl_connection *connection, const char *address) {
    return p_X509_VERIFY_PARAM_set1_ip_asc(p_SSL_get0_param(connection), address);
}

static int outcome(clibssl_connection *connection, int result) {
    switch (p_SSL_get_error(connection, result)) {
    case ERROR_WANT_READ: return CLIBSSL_WANT_READ;
    case ERROR_WANT_WRITE: return CLIBSSL_WANT_WRITE;
    case ERROR_ZERO_RETURN: return CLIBSSL_CLOSED;
    default: return CLIBSSL_FAILED;
    }
}

// SSL_get_error reads this thread's error queue, which must be empty before each call.
int clibssl_handshake(clibssl_connection *connection) {
    p_ERR_clear_error();
    int result = p_SSL_connect(connection);
    return result == 1 ? CLIBSSL_DONE : outcome(connection, result);
}

int clibssl_read(clibssl_connection *connection, void *buffer, int length, int *transferred) {
    p_ERR_clear_error();
    int result = p_SSL_read(connection, buffer, length);
    *transferred = result > 0 ? result : 0;
    return result > 0 ? CLIBSSL_DONE : outcome(connection, result);
}

int clibssl_write(clibssl_connection *connection, const void *buffer, int length, int *transferred) {
    p_ERR_clear_error();
    int result = p_SSL_write(connection, (void *)buffer, length);
    *transferred = result > 0 ? result : 0;
    return result > 0 ? CLIBSSL_DONE : outcome(connection, result);
}

void clibssl_shutdown(clibssl_connection *connection) { (void)p_SSL_shutdown(connection); }

long clibssl_verify_result(clibssl_connection *connection) { return p_SSL_get_verify_result(connection); }

const char *clibssl_verify_words(long result) { return p_X509_verify_cert_error_string(result); }

long clibssl_verify_hostname_mismatch(void) { return V_ERR_HOSTNAME_MISMATCH; }

long clibssl_verify_ip_address_mismatch(void) { return V_ERR_IP_ADDRESS_MISMATCH; }

void clibssl_failure(char *text, size_t size) {
    if (size == 0) return;
    text[0] = 0;
    unsigned long error = p_ERR_get_error();
    const char *reason = error ? p_ERR_reason_error_string(error) : NULL;
    if (reason) snprintf(text, size, "%s", reason);
    p_ERR_clear_error();
}
