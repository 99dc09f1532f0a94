import Testing

@testable import Rebound

@Suite("SipHash-2-4")
struct SipHashTests {
    /// The key of the reference implementation's vectors: the bytes 00 01 … 0f.
    static let referenceKey = SipHash24(k0: 0x0706_0504_0302_0100, k1: 0x0F0E_0D0C_0B0A_0908)

    /// The reference implementation's vectors (`vectors_sip64`): the value for the message 00 01 … (n − 1), n from 0
    /// to 63, under `referenceKey`.
    static let referenceValues: [UInt64] = [
        0x726F_DB47_DD0E_0E31, 0x74F8_39C5_93DC_67FD, 0x0D6C_8009_D9A9_4F5A, 0x8567_6696_D7FB_7E2D,
        0xCF27_94E0_2771_87B7, 0x1876_5564_CD99_A68D, 0xCBC9_466E_58FE_E3CE, 0xAB02_00F5_8B01_D137,
        0x93F5_F579_9A93_2462, 0x9E00_82DF_0BA9_E4B0, 0x7A5D_BBC5_94DD_B9F3, 0xF4B3_2F46_226B_ADA7,
        0x751E_8FBC_860E_E5FB, 0x14EA_5627_C084_3D90, 0xF723_CA90_8E7A_F2EE, 0xA129_CA61_49BE_45E5,
        0x3F2A_CC7F_57C2_9BDB, 0x699A_E9F5_2CBE_4794, 0x4BC1_B3F0_968D_D39C, 0xBB6D_C91D_A779_61BD,
        0xBED6_5CF2_1AA2_EE98, 0xD0F2_CBB0_2E3B_67C7, 0x9353_6795_E3A3_3E88, 0xA80C_038C_CD5C_CEC8,
        0xB8AD_50C6_F649_AF94, 0xBCE1_92DE_8A85_B8EA, 0x17D8_35B8_5BBB_15F3, 0x2F2E_6163_076B_CFAD,
        0xDE4D_AAAC_A71D_C9A5, 0xA6A2_5066_8795_6571, 0xAD87_A353_5C49_EF28, 0x32D8_92FA_D841_C342,
        0x7127_512F_72F2_7CCE, 0xA7F3_2346_F959_78E3, 0x12E0_B01A_BB05_1238, 0x15E0_34D4_0FA1_97AE,
        0x314D_FFBE_0815_A3B4, 0x0279_90F0_2962_3981, 0xCADC_D4E5_9EF4_0C4D, 0x9ABF_D876_6A33_735C,
        0x0E3E_A96B_5304_A7D0, 0xAD0C_42D6_FC58_5992, 0x1873_06C8_9BC2_15A9, 0xD4A6_0ABC_F379_2B95,
        0xF935_451D_E4F2_1DF2, 0xA953_8F04_1975_5787, 0xDB9A_CDDF_F56C_A510, 0xD06C_98CD_5C09_75EB,
        0xE612_A3CB_9ECB_A951, 0xC766_E62C_FCAD_AF96, 0xEE64_435A_9752_FE72, 0xA192_D576_B245_165A,
        0x0A87_87BF_8ECB_74B2, 0x81B3_E73D_20B4_9B6F, 0x7FA8_220B_A3B2_ECEA, 0x2457_31C1_3CA4_2499,
        0xB78D_BFAF_3A8D_83BD, 0xEA1A_D565_322A_1A0B, 0x60E6_1C23_A379_5013, 0x6606_D7E4_4628_2B93,
        0x6CA4_ECB1_5C5F_91E1, 0x9F62_6DA1_5C96_25F3, 0xE51B_3860_8EF2_5F57, 0x958A_324C_EB06_4572,
    ]

    @Test("Every message length of the reference vectors, 0 to 63 bytes, gives the reference value")
    func matchesTheReferenceVectors() {
        for (length, expected) in Self.referenceValues.enumerated() {
            let message = (0..<length).map { UInt8($0) }
            #expect(Self.referenceKey(message) == expected, "length \(length)")
        }
    }

    /// The reference implementation's vectors of the 128-bit output (`vectors_sip128`): the value for the message
    /// 00 01 … (n − 1), n from 0 to 63, under `referenceKey`, as its first and last eight bytes read little-endian.
    static let referenceWideValues: [(UInt64, UInt64)] = [
        (0xE6A8_25BA_047F_81A3, 0x9302_55C7_1472_F66D), (0x44AF_996B_D8C1_87DA, 0x45FC_229B_1159_7634),
        (0xC75D_A4A4_8D22_7781, 0xE4FF_0AF6_DE8B_A3FC), (0x4EA9_6752_0CB6_709C, 0x51ED_8529_B0B6_335F),
        (0xAF8F_9C2D_C164_81F8, 0x7955_CD7B_7C6E_0F7D), (0x886F_7780_5987_6813, 0x2796_0E69_077A_5254),
        (0x1386_208B_33CA_EE14, 0x5EA1_D78F_30A0_5E48), (0x53C1_DBD8_BEEB_F1A1, 0x3982_F01F_A64A_B8C0),
        (0x61F5_5862_BAA9_623B, 0xB497_14F3_64E2_830F), (0xABBA_D90A_0699_4426, 0xED71_6DBB_028B_7FC4),
        (0x5669_1478_C30D_1100, 0xBAFB_D0F3_D347_54C9), (0x7766_6B38_68C5_5101, 0x18DC_E581_6FDC_B4A2),
        (0x58F3_5E90_66B2_26D6, 0x25C1_3285_F64D_6382), (0x108B_C0E9_47E2_6998, 0xF752_B9C4_4F93_29D0),
        (0x9CDE_D766_ACEF_FC31, 0x0249_49E4_5F48_C77E), (0x11A8_B033_99E9_9354, 0xD9C3_CF97_0FEC_087E),
        (0xBB54_B067_CAA4_E26E, 0x7705_2385_BF15_33FD), (0x98B8_8D73_E806_3D47, 0x4077_E47A_C466_C054),
        (0x8548_BF23_E4E5_26A4, 0x23F7_AEFE_81A4_4D29), (0xB0FA_65CF_3177_0178, 0xB12E_5152_8920_D574),
        (0x7390_223F_83FC_259E, 0xEB39_38E8_A544_933E), (0x215A_52BE_5A49_8E56, 0x121D_073E_CD14_228A),
        (0x9A6B_D152_45B5_294A, 0xAE0A_FF8E_5210_9C46), (0xE0F5_A9D5_DD84_D1C9, 0x1C69_BF9A_9AE2_8CCF),
        (0xD850_BD78_AE79_B42D, 0xAD32_618A_178A_2A88), (0x7B44_5E2D_045F_CE8E, 0x6F8F_8DCB_EAB9_5150),
        (0xE807_C3B3_B453_0B9C, 0x661F_1478_86E0_AE7E), (0xE4EA_A669_AF48_F2AB, 0x94EB_9E12_2FEB_D3BF),
        (0x884B_5768_16DA_6406, 0xF4AE_5873_02F3_35B9), (0xE97D_33BF_C49D_4BAA, 0xB76A_7C46_3CFD_D40C),
        (0xDE6B_AF1F_477F_5CEA, 0x8722_6D68_D4D7_1A2B), (0xFCFA_2332_18B0_3929, 0x353D_C452_4FDE_2317),
        (0x3EFC_EA5E_CA56_397C, 0x68EB_4665_559D_3E36), (0x321C_F046_7107_C677, 0xCFFF_A94E_5F9D_B6B6),
        (0xDF7E_84B8_6C98_A637, 0xDE54_9B30_F1F0_2509), (0xF9A8_A99D_E6F0_05A7, 0xC88C_3C92_2E1A_2407),
        (0x4648_C429_1F7D_C43D, 0x1167_4F90_ED76_9E1E), (0x1A0E_FCE6_01BF_620D, 0x2B69_D3C5_5147_3C0D),
        (0x9E66_7CCA_8B46_038C, 0xB5E7_BE4B_085E_FDE4), (0x9C2C_AF3B_B95B_8A52, 0xD92B_D2D0_E5CC_7344),
        (0xAD5D_C995_1E30_6ADF, 0xD83B_91C6_C80C_AE97), (0x397F_852C_9089_1180, 0xDBB6_705E_2891_35E7),
        (0xBB31_C2C9_6A34_17E6, 0x5B0C_CACC_34AE_5036), (0xAA21_B7EF_3734_D927, 0x89DF_5AEC_DC21_1840),
        (0x785E_9CED_9D7D_2389, 0x4273_CC66_B1C9_B1D8), (0x657D_5EBF_9180_6D4A, 0x4CB1_50A2_94FA_8911),
        (0x89AE_E755_60F9_330E, 0x0229_49CF_3D0E_FC3F), (0xD119_0B72_2B43_1CE6, 0x1B15_63DC_4BD8_C88E),
        (0xCF82_F749_F5AE_E5F7, 0x169B_2608_A655_9037), (0x4FA5_B7D0_0F03_8D43, 0x0364_1A20_ADF2_37A8),
        (0xE304_BF4F_EED3_90A5, 0x3F42_86F2_270D_7E24), (0xC493_FE72_A1C1_E25F, 0x38F5_F9AE_7CD3_5CB1),
        (0x6EB3_06BD_5C32_972C, 0x7C01_3A8B_D03D_13B2), (0x94CA_6B7A_2214_C892, 0x9ED3_2A00_9F65_F09F),
        (0x8C32_D80B_1150_E8DC, 0x871D_91D6_4108_D5FB), (0x1279_DAC7_8449_F167, 0xDA83_2592_B52B_E348),
        (0xE94E_D572_CFF2_3819, 0x362A_1DA9_6F16_947E), (0xFE49_ED46_961E_4874, 0x8E69_0416_3024_620F),
        (0xD8D6_A998_DEA5_FC57, 0x1D8A_3D58_D038_6400), (0xBE1C_DCEF_1CDE_EC9F, 0x5953_57D9_7436_76D4),
        (0x53F1_28EB_000C_04E3, 0x40E7_72D8_CB73_CA66), (0xFE1D_836A_9A00_9776, 0x7A0F_6793_591C_A9CC),
        (0xA067_F521_2354_5358, 0xBD59_47F0_A447_D505), (0x4A83_502F_77D1_5051, 0x7CBD_3F97_9A06_3E50),
    ]

    @Test("Every message length of the 128-bit reference vectors, 0 to 63 bytes, gives the reference value")
    func matchesTheWideReferenceVectors() {
        for (length, expected) in Self.referenceWideValues.enumerated() {
            let value = Self.referenceKey.wide((0..<length).map { UInt8($0) })
            #expect(value == expected, "length \(length)")
        }
    }

    @Test("An 8-byte message given as a word has the 128-bit value of its bytes")
    func aWordIsItsEightBytes() {
        #expect(Self.referenceKey.wide(0x0706_0504_0302_0100) == Self.referenceWideValues[8])
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let word: UInt64 = generator.next()
            let bytes = withUnsafeBytes(of: word.littleEndian) { Array($0) }
            #expect(Self.referenceKey.wide(word) == Self.referenceKey.wide(bytes))
        }
    }

    @Test("Keys drawn from the system's random source differ, and so do their values")
    func freshKeysDiffer() {
        let a = SipHash24()
        let b = SipHash24()
        #expect(a.wide(1) != b.wide(1))
        #expect(a.wide(1) == a.wide(1))
    }
}
