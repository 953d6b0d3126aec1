// SPDX-License-Identifier: MIT
/* C++ fixture for test_dwarf.c: never run, only read. */
namespace ns
{
template <class T> struct Type {
	__attribute__((noinline)) T method(T);
};

template <class T> T Type<T>::method(T x)
{
	__asm__ volatile("");
	return x * 2 + 1;
}

template struct Type<long>;
} // namespace ns

int main(int argc, char **argv)
{
	ns::Type<long> t;
	return (int)t.method(argc);
}
