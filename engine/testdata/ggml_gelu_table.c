// ggml_gelu_table dumps the GELU table of one of ggml's CPU backends,
// ggml_table_gelu_f16 (65536 F16 values, little-endian), from the library
// node-llama-cpp ships, for TestGELUTable:
//
//	B=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
//	cc -o /tmp/ggml_gelu_table engine/testdata/ggml_gelu_table.c -ldl
//	LD_LIBRARY_PATH=$B /tmp/ggml_gelu_table $B/libggml-cpu-haswell.so /tmp/gelu.bin
//	go test ./engine -run TestGELUTable -ggml-gelu-table /tmp/gelu.bin
//
// Every build for CPUs with FMA (haswell, skylakex, icelake, zen4, ...)
// has the same table; the baseline ones (x64, sse42) differ in one entry.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s libggml-cpu-VARIANT.so OUT\n", argv[0]);
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	void (*init)(void) = (void (*)(void))dlsym(lib, "ggml_cpu_init");
	uint16_t *table = (uint16_t *)dlsym(lib, "ggml_table_gelu_f16");
	if (!init || !table) {
		fprintf(stderr, "no ggml_cpu_init or ggml_table_gelu_f16 in %s\n", argv[1]);
		return 1;
	}
	init(); // fills the tables
	FILE *out = fopen(argv[2], "wb");
	if (!out || fwrite(table, 2, 1 << 16, out) != 1 << 16 || fclose(out) != 0) {
		perror(argv[2]);
		return 1;
	}
	return 0;
}
