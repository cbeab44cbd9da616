#include <stdio.h>
int main(void) { puts("rotor"); return 0; }
