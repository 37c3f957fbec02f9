from repogym.cli import main

main()
