package main

import (
	"fmt"
	"io"
	"os"

	"pypto/device"
	"pypto/internal/atomicfile"
	"pypto/isa"
)

// loadProgram reads a program file in text or binary form.
func loadProgram(path string) (*isa.Program, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) >= 4 && string(data[:4]) == "PTOB" {
		p, err := isa.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return p, nil
	}
	return isa.ParseFile(path)
}

// writeOut writes to the -o file, or to stdout without one.
func writeOut(path string, stdout io.Writer, data []byte) error {
	if path == "" {
		_, err := stdout.Write(data)
		return err
	}
	return atomicfile.WriteFile(path, data)
}

func cmdAsm(args []string, stdout io.Writer) error {
	fs := newFlags("asm")
	out := fs.String("o", "", "output file (default: stdout)")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	p, err := isa.ParseFile(path)
	if err != nil {
		return err
	}
	return writeOut(*out, stdout, isa.Encode(p))
}

func cmdDisasm(args []string, stdout io.Writer) error {
	fs := newFlags("disasm")
	out := fs.String("o", "", "output file (default: stdout)")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	p, err := loadProgram(path)
	if err != nil {
		return err
	}
	return writeOut(*out, stdout, []byte(isa.Format(p)))
}

func cmdVerify(args []string, stdout io.Writer) error {
	fs := newFlags("verify")
	chipName := fs.String("chip", "", "chip preset whose buffer capacities apply ("+fmt.Sprint(device.PresetNames())+")")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	p, err := loadProgram(path)
	if err != nil {
		return err
	}
	var capacity func(isa.Location) int
	if *chipName != "" {
		chip, err := device.Preset(*chipName)
		if err != nil {
			return err
		}
		capacity = chip.Capacity
	}
	if err := isa.Verify(p, capacity); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%s kernel %s, %d instructions)\n", path, p.Core, p.Name, len(p.Body))
	return nil
}
